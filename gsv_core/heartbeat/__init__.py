"""Heartbeats: periodic check-ins where the agent reads HEARTBEAT.md and says
whether anything needs attention.

`duration` reads intervals ("30m", "1h30m", "off"), `active_hours` decides whether a
moment lies in the agent's waking window, `settings` merges an agent's heartbeat config
over `agents.defaultHeartbeat` (read live on every tick), `checks` holds the
skip reasons and the HEARTBEAT.md test, `response` decides which replies reach a person
(any reply but HEARTBEAT_OK), `state` is what `heartbeat.status` shows, `host` is what the gateway
provides, and `service` is the timer that runs the beats.
"""

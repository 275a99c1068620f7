"""Running gsv processes as services: user-level systemd/launchd units (`units`) and
detached background processes with pid and log files (`background`).

Parametrised by a service name ("gateway", "node") and the argv to run, so the gateway
and the node daemon share the same machinery.
"""

"""Scheduled agent work: schedules and their next run (`schedule`), the phrases
people write for a time (`phrases`), jobs and their validation (`jobs`), the `gsv__Cron`
input forms (`tool_input`), one run of a job against the sessions (`execution`) and the
timer that runs due jobs (`service`)."""

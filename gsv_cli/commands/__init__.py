"""One module per command group. Modules stay light at import time: anything heavy
(websockets, pydantic, the gateway) is imported inside the command body, so `gsv --help`
stays fast."""

"""gsv core: the protocol, the gateway, the node daemon and everything they share.

The CLI (`gsv_cli`) is a thin client of this package; nothing here imports it.
"""

__version__ = "0.1.0"

"""The OS boundary around the commands a node runs (docs/sandbox.md).

The approval gate reads a command line and decides; text cannot show everything a program
will do. So every child of Bash (and through it, Process) that the owner did not approve
runs inside an OS sandbox: the file system read-only but for the workspace and a private
/tmp, gsv's own files and the usual credential stores hidden, no other process of the
machine visible, no network unless the owner allows it.

    sandbox = choose_sandbox("auto", SandboxPolicy(workspace="/home/me/project"))
    argv = sandbox.wrap(["/bin/bash", "-lc", "make test"], workdir)

`choose.py` picks the backend per OS (`bwrap.py` on Linux, `seatbelt.py` on macOS,
`none.py` where there is none), `hidden.py` says what is hidden, `environment.py` what a
command's environment never carries, `failure.py` what a confined command that failed for
lack of network or write access is told.
"""

from gsv_core.node.sandbox.base import Sandbox
from gsv_core.node.sandbox.base import SandboxPolicy
from gsv_core.node.sandbox.base import SandboxUnavailable
from gsv_core.node.sandbox.choose import MODES
from gsv_core.node.sandbox.choose import choose_sandbox

__all__ = ["MODES", "Sandbox", "SandboxPolicy", "SandboxUnavailable", "choose_sandbox"]

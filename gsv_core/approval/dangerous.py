"""The programs that ask by what they are, whatever the mode's reading: they destroy data,
change privileges or the system, talk to the network, rewrite history, or run inline code.
The denylist mode's preset asks for each (policy.py); on a sandboxed node, those whose harm
the sandbox does not contain still ask when the rest of a line runs unasked (lines.py,
docs/sandbox.md)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Group:
    rule_id: str
    reason: str
    programs: tuple[tuple[str, ...], ...]  # a program, or a program and its subcommand
    # the sandbox contains it (inline code runs confined like any script): it need not ask
    contained: bool = False


def _programs(text: str) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(p.split()) for p in text.split(",") if p.strip())


GROUPS = (
    Group("gsv-destructive", "deletes or overwrites data",
          _programs("rm,rmdir,shred,dd,mkfs,wipefs,fdisk,parted,truncate,find -delete")),
    Group("gsv-privilege", "changes privileges or ownership",
          _programs("sudo,su,doas,chmod,chown,chgrp,chattr,setfacl,passwd,usermod")),
    Group("gsv-system", "stops processes or changes the system",
          _programs("kill,pkill,killall,shutdown,reboot,poweroff,halt,systemctl,service,"
                    "launchctl,crontab")),
    Group("gsv-network", "talks to the network or publishes",
          _programs("curl,wget,scp,rsync,ssh,sftp,nc,ncat,socat,git push,git remote,"
                    "npm publish")),
    Group("gsv-history", "rewrites version control history",
          _programs("git reset,git clean,git checkout --,git rebase,git filter-branch")),
    Group("gsv-inline-code", "runs inline code gsv cannot inspect",
          _programs("python -c,python3 -c,perl -e,ruby -e,node -e,osascript"), contained=True),
)  # fmt: skip
# within the sandbox, chmod reaches only the workspace's files (`chmod +x build.sh`), and
# no-new-privileges makes a setuid bit worthless there
CONTAINED_PROGRAMS = frozenset({("chmod",)})


def still_asks(argv: tuple[str, ...]) -> Group | None:
    """The group of `argv` (a program and its arguments) that asks even inside the
    sandbox, if any."""
    for group in GROUPS:
        if group.contained:
            continue
        for program in group.programs:
            if program not in CONTAINED_PROGRAMS and _runs(argv, program):
                return group
    return None


def _runs(argv: tuple[str, ...], program: tuple[str, ...]) -> bool:
    """`rm` runs in `rm -rf x`; `git push` in `git push origin`; `find -delete` in a find
    with -delete anywhere."""
    if len(program) == 2 and program[0] == "find":
        return argv[:1] == ("find",) and program[1] in argv
    return argv[: len(program)] == program

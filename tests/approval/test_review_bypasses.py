"""Bypasses of the allowlist gate found in review, each proven twice: a real `bash` in a
tmp dir does the harm (so the line is no straw man), and the policy no longer lets it run
unasked. Lines near them that still run unasked are run for real too, and do no harm."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gsv_core.approval.decision import Decision
from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from gsv_core.approval.shell import parse_script
from gsv_core.paths import resolve_paths
from tests.approval.test_allowlist import home_secrets
from tests.approval.test_dangerous_lines_for_real import node_replies
from tests.approval.test_dangerous_lines_for_real import prepare

SECRET = "OWNER-SECRET-TOKEN"


@dataclass
class Machine:
    """A home with gsv's secret files (holding SECRET), a workspace and a canary outside it."""

    home: Path
    workspace: Path
    out: Path

    @property
    def config(self) -> Path:
        return self.home / ".config/gsv"

    def fill(self, line: str) -> str:
        return line.format(out=self.out, ws=self.workspace, home=self.home, cfg=self.config)

    def decide(self, line: str, workdir: str = "", **section: Any) -> Decision:
        args = {"command": self.fill(line), **({"workdir": workdir} if workdir else {})}
        facts = CallFacts("n__Bash", "Bash", "n", args, str(self.workspace))
        policy = ApprovalPolicy.from_config({"toolApproval": section}, home_secrets())
        return policy.decide(facts)

    def bash(self, line: str, workdir: str = "") -> str:
        """What a real bash prints running the line in the workspace (or `workdir`)."""
        done = subprocess.run(
            ["bash", "-c", self.fill(line)],
            cwd=os.path.expanduser(workdir) if workdir else self.workspace,
            capture_output=True,
            text=True,
            timeout=20,
            env={**os.environ, "HOME": str(self.home)},
        )
        return done.stdout + done.stderr

    def intact(self) -> bool:
        canary = self.out / "canary"
        return (
            canary.exists() and canary.read_text() == "alive\n" and not (self.out / "new").exists()
        )


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    home = Path(os.path.expanduser("~"))  # the test's own $HOME (tests/conftest.py)
    for path in (".config/gsv/secrets.toml", ".config/gsv/config.toml",
                 ".local/share/gsv/gsv.db"):  # fmt: skip
        (home / path).parent.mkdir(parents=True, exist_ok=True)
        (home / path).write_text(f"token = '{SECRET}'\n")
    workspace, out = tmp_path / "ws", tmp_path / "outside"
    (workspace / "src").mkdir(parents=True)
    out.mkdir()
    (workspace / "README.md").write_text("hello\n")
    (workspace / "src" / "README.md").write_text("inside\n")
    (out / "canary").write_text("alive\n")
    return Machine(home, workspace, out)


def assert_harmless(machine: Machine, lines: list[str]) -> None:
    """Each line runs unasked, and run for real it neither prints a secret nor touches
    the canary."""
    for line in lines:
        assert machine.decide(line).verdict == "allow", line
        assert SECRET not in machine.bash(line), line
        assert machine.intact(), line


# -- 1. control characters: bash reads `\r` as part of a word, never as a blank ----------
CONTROL_LINES = [
    "ls \r#; touch {out}/new; rm -f {out}/canary",
    "ls\r#; rm -f {out}/canary",
    "echo \x0b#; rm -f {out}/canary",
    "echo \x0c#; rm -f {out}/canary",
    "ls \r\nrm -f {out}/canary",
    "echo '\r'; rm -f {out}/canary",
]


@pytest.mark.parametrize("line", CONTROL_LINES)
def test_a_control_character_never_hides_the_rest_of_the_line(machine: Machine, line: str) -> None:
    """`ls \\r#; rm ...`: bash runs the `rm` (the `#` is inside the word `\\r#`); the reader
    no longer takes it for a comment, and any control character asks."""
    machine.bash(line)
    assert not machine.intact()  # bash really ran what follows
    assert machine.decide(line).verdict == "ask"
    assert "control character" in machine.decide("ls \r#").reason


@pytest.mark.parametrize(
    "line",
    ["echo done \u202e; rm -rf {out}/canary #", "ls \u2067{out}\u2069", "cat\u200f notes"],
)
def test_a_direction_control_asks_and_is_shown_not_obeyed(machine: Machine, line: str) -> None:
    """U+202E and the other direction controls reorder what a person reads (bash takes
    them as letters of a word): the line asks, and its summary, what every prompt shows,
    writes each as an escape."""
    decision = machine.decide(machine.fill(line))
    assert decision.verdict == "ask"
    assert "direction control" in decision.reason
    assert not any(c in decision.summary for c in "\u202e\u2067\u2069\u200f")
    assert "\\u" in decision.summary


@pytest.mark.parametrize("mode", ["allowlist", "denylist", "off"])
def test_a_carriage_return_does_not_hide_a_secret_read(machine: Machine, mode: str) -> None:
    """The commands after `\\r#` are read, so the secret check sees them in every mode."""
    line = "ls \r#; cat {cfg}/secrets.toml"
    assert SECRET in machine.bash(line)
    assert machine.decide(line, mode=mode).verdict == "deny"


@pytest.mark.parametrize("char", ["\r", "\x00", "\x0b", "\x0c", "\x1b", "\x7f", "\x85"])
def test_every_control_character_but_tab_and_newline_is_a_doubt(char: str) -> None:
    """NUL (dropped by bash from what it reads on stdin), form feed, escape, DEL, NEL ..."""
    parsed = parse_script(f"ls{char}x")
    assert not parsed.confident
    assert parse_script("ls\tx\nls").confident


def test_words_split_on_space_and_tab_only() -> None:
    """A carriage return, a form feed or a non-breaking space is part of a word, as in bash."""
    for blank in ("\r", "\x0c", "\u00a0", "\u2028", "\u3000"):
        assert [c.argv for c in parse_script(f"ls {blank}#; rm x").commands] == [
            ("ls", f"{blank}#"),
            ("rm", "x"),
        ]


def test_lines_with_unusual_spaces_that_run_are_harmless(machine: Machine) -> None:
    """A non-breaking space is an ordinary character: the word is one word, also for bash."""
    assert_harmless(machine, ["echo a\u00a0#; cat README.md", "cat README.md \u00a0#"])


# -- 3. privileged wrappers: the read-only table is about the owner's own files -----------
@pytest.mark.parametrize(
    "line",
    [
        "sudo cat /etc/shadow",
        "sudo -n grep -r PRIVATE /root/.ssh",
        "sudo -u postgres cat /var/lib/postgresql/.pgpass",
        "sudo ls -la /root",
        "doas cat /etc/shadow",
        "pkexec cat /etc/shadow",
        "run0 cat /etc/shadow",
        "su -c 'cat /etc/shadow'",
        "nice sudo cat /etc/shadow",
        "sudo",
        "sudo -k",
    ],
)
def test_anything_run_as_another_user_asks(machine: Machine, line: str) -> None:
    """`sudo cat /etc/shadow` is a `cat`, but as root: it asks, whatever the program."""
    assert machine.decide(line).verdict == "ask"
    assert machine.decide(line, allow=["cat"]).verdict == "ask"
    configured = [{"id": "c", "tool": "*__Bash", "programs": ["cat", "grep", "ls"],
                   "decision": "allow"}]  # fmt: skip
    assert machine.decide(line, rules=configured).verdict == "ask"


def test_a_privileged_wrapper_still_shows_a_deny_rule_its_command() -> None:
    """A configured deny rule for `rm` catches `pkexec rm` and `run0 rm` too."""
    rules = [{"id": "no-rm", "tool": "*__Bash", "programs": ["rm"], "decision": "deny"}]
    policy = ApprovalPolicy.from_config({"toolApproval": {"rules": rules}}, home_secrets())
    for line in ("sudo rm -rf x", "pkexec rm -rf x", "run0 --user=root rm -rf x"):
        facts = CallFacts("n__Bash", "Bash", "n", {"command": line}, "/work/space")
        assert policy.decide(facts).verdict == "deny", line


# -- 2d. file names read from a file the line does not show ------------------------------
NAMES_FROM_LINES = [
    "sort --files0-from=names0.lst",
    "sort --files0-from names0.lst",
    "sort --files0 names0.lst",
    "wc -c --files0-from=names0.lst",
    "du --files0-from=names0.lst",
    "sha256sum -c sums.txt",
    "md5sum --check sums.txt",
    "strings @names.lst",
    "strings -- @names.lst",
    "strings -a @names.lst",
    "strings *.lst",
    "file -f names.lst",
    "echo names0.lst | xargs wc --files0-from",
]


@pytest.mark.parametrize("line", NAMES_FROM_LINES)
def test_options_that_read_file_names_from_a_file_ask(machine: Machine, line: str) -> None:
    """The model writes a list naming the secret store (the Write tool, in the workspace)
    and has an allowlisted reader open what the list names: it asks."""
    secret = machine.config / "secrets.toml"
    (machine.workspace / "names0.lst").write_text(f"{secret}\0")
    (machine.workspace / "names.lst").write_text(f"{secret}\n")
    (machine.workspace / "@names.lst").write_text("a file whose name `*.lst` turns into @FILE")
    sums = subprocess.run(["sha256sum", secret], capture_output=True, text=True).stdout
    (machine.workspace / "sums.txt").write_text(sums)
    if line.startswith(("sort", "strings")):
        assert SECRET in machine.bash(line)  # the control: bash really prints the secret
    assert machine.decide(line).verdict == "ask"


def test_counting_and_listing_with_patterns_still_runs(machine: Machine) -> None:
    """`wc -l *.md`, `du -sh *`, `sha256sum *.md`: a pattern spelling `--files0-from`
    would reveal sizes or counts at most, so patterns still run there."""
    assert_harmless(machine, ["wc -l *.md", "du -sh *", "sha256sum *.md", "strings README.md"])


# -- 2b. directory changes the secret check must follow ---------------------------------
CD_LINES = [
    "builtin cd {cfg} && cat secrets.toml",
    "command cd {cfg} && cat config.toml",
    "command -p cd {cfg} && cat config.toml",
    "time cd {cfg} && cat secrets.toml",
    "cd -P {cfg} && cat secrets.toml",
    "cd -L {cfg}; cat secrets.toml",
    "cd -Pe {cfg} && cat secrets.toml",
    "cd -- {cfg} && cat secrets.toml",
    "cd -P -- {cfg} && cat secrets.toml",
    "pushd {cfg} && cat secrets.toml",
    "pushd {cfg} >/dev/null; pushd /tmp; popd; cat secrets.toml",
    "cd {cfg}; cd /tmp; cd - && cat secrets.toml",
    "cd {cfg}; cd /tmp; cat ~-/secrets.toml",
    "cd {cfg}; cd /tmp; grep -r TOKEN ~-",
    "cd {cfg} && cat ~+/secrets.toml",
    "cd {home}/.config && cd gsv && cat config.toml",
]


@pytest.mark.parametrize("mode", ["allowlist", "off"])
@pytest.mark.parametrize("line", CD_LINES)
def test_every_way_bash_changes_directory_is_followed(
    machine: Machine, line: str, mode: str
) -> None:
    """`builtin cd DIR && cat secrets.toml` and friends: bash prints the secret; the
    secret check follows the directory change and refuses, in every mode."""
    assert SECRET in machine.bash(line)
    assert machine.decide(line, mode=mode).verdict == "deny"


@pytest.mark.parametrize(
    "line",
    [
        "env cd {cfg} && cat secrets.toml",
        "nice cd {cfg}; cat config.toml",
        "cd -x {cfg}; cat secrets.toml",
        "cd {cfg} /tmp; cat secrets.toml",
        "pushd -n {cfg}; cat secrets.toml",
        "cat ~-/secrets.toml",
        "grep -r TOKEN ~-",
    ],
)
def test_a_directory_change_that_cannot_be_followed_still_protects(line: str) -> None:
    """A `cd` through another wrapper, with an unknown option or too many operands, and
    `~-` before any `cd`: the directory is unknown, so a secret's name is enough."""
    assert (
        Machine(Path("/h"), Path("/work/space"), Path("/o")).decide(line, mode="off").verdict
        == "deny"
    )


def test_directory_changes_that_run_are_harmless(machine: Machine) -> None:
    """The forms the check follows still run when they lead somewhere ordinary."""
    lines = ["builtin cd src && cat README.md", "cd -P src && ls", "cd -- src && cat README.md",
             "pushd src >/dev/null && cat README.md", "cd src && cat ~+/README.md",
             "cd src; cd ..; cat ~-/README.md"]  # fmt: skip
    assert_harmless(machine, lines)


# -- 2c. /proc links: a process's root, working directory, open and mapped files ---------
PROC_LINES = [
    "cat /proc/self/root{cfg}/./secrets.toml",
    "cat /proc/self/root/../..{cfg}/secrets.toml",
    "cat /proc/thread-self/root{home}/.local/share/gsv/./gsv.db",
    "cat /proc/self/task/*/root{cfg}/secrets.toml",
    "grep -r TOKEN /proc/self/root{cfg}",
    "cd /proc/self/root{cfg} && cat secrets.toml",
    "cd /proc/self && cat root{cfg}/secrets.toml",
    "cd {cfg} && cat /proc/self/cwd/secrets.toml",
    "cat /pr?c/self/r??t{cfg}/secrets.toml",
]


@pytest.mark.parametrize("mode", ["allowlist", "off"])
@pytest.mark.parametrize("line", PROC_LINES)
def test_proc_links_do_not_hide_a_secret(machine: Machine, line: str, mode: str) -> None:
    """`/proc/self/root/<path>` is `<path>`; `/proc/*/cwd`, `/fd`, `/map_files` lead where
    gsv cannot see: refused."""
    assert SECRET in machine.bash(line)
    assert machine.decide(line, mode=mode).verdict == "deny"


@pytest.mark.parametrize(
    "line",
    ["cat /proc/1/cwd/x", "ls /proc/self/fd", "cat /proc/4242/fd/7", "cat /proc/*/map_files/*"],
)
def test_proc_links_gsv_cannot_follow_are_refused(machine: Machine, line: str) -> None:
    """Another process's working directory or open files (the gateway holds its database)."""
    assert machine.decide(line).verdict == "deny"


def test_proc_paths_that_run_are_harmless(machine: Machine) -> None:
    """`/proc/self/root/...` of an ordinary file, `/proc/cpuinfo`: still read unasked."""
    assert_harmless(machine, ["cat /proc/self/root{ws}/README.md", "head -3 /proc/cpuinfo"])


# -- 2a. brace expansion: `{secrets,x}.toml` is two file names ---------------------------
BRACE_LINES = [
    "cat {cfg}/{{secrets,nothing}}.toml",
    "cat {cfg}/{{config,x}}.toml",
    "cat {home}/.local/share/gsv/gsv.d{{b,x}}",
    "cat {home}/.local/share/gsv/gsv.d{{a..c}}",
    "grep -r TOKEN {home}/.con{{fig,x}}",
    "head -c 200 {cfg}/secret{{s,}}.toml",
    "cat ~/.config/gsv/{{secrets,x}}.toml",
    "cat {{~,/nowhere}}/.config/gsv/secrets.toml",
    "cat {cfg}/{{s{{e,x}}crets,y}}.toml",
    "cd {cfg} && cat {{secrets,x}}.toml",
    "cat < {cfg}/secrets.to{{m..m}}l",
    "cat {cfg}/secrets.{{toml,{{1..99}}}}",
    "cat {cfg}/{{a,b}}{{a,b}}{{a,b}}{{a,b}}{{a,b}}{{a,b}}{{a,b}}/../secrets.toml",
    "{{cat,{cfg}/secrets.toml}}",
]


@pytest.mark.parametrize("mode", ["allowlist", "denylist", "off"])
@pytest.mark.parametrize("line", BRACE_LINES)
def test_brace_expansion_does_not_hide_a_secret(machine: Machine, line: str, mode: str) -> None:
    """bash expands the braces and prints the secret; the secret check reads the words
    bash makes (beyond 64 of them, a `*` pattern for each group) and refuses."""
    if "/{a,b}{a,b}" not in machine.fill(line):  # (bash cannot open `aaaaaaa/..`)
        assert SECRET in machine.bash(line)
    assert machine.decide(line, mode=mode).verdict == "deny"


def test_the_words_brace_expansion_makes_are_bashs() -> None:
    """Quoted or escaped braces and commas stay, `${...}` is not a group, sequences count
    as bash counts (letters, steps, zero padding)."""
    cases = {
        "a{b}c{d,e}": "a{b}cd a{b}ce",
        "{a{b,c}}": "{ab} {ac}",
        "{{a,b}": "{a {b",
        "x{a,b}{": "xa{ xb{",
        '{a,b"}"}': "a b}",
        "{a,b\\}": "{a,b}",
        "'{a,b}'": "{a,b}",
        "{a..e..2}": "a c e",
        "{01..3}": "01 02 03",
        "{5..1}": "5 4 3 2 1",
        "{a,{b,c}}x": "ax bx cx",
        "--file={a,b}": "--file=a --file=b",
        "${HOME}{a,b}": "${HOME}a ${HOME}b",
        "{1..100}": "*",
    }
    for word, expected in cases.items():
        made = parse_script(f"echo {word}").commands[0].words[1]
        assert " ".join(made.braces or (made.text,)) == expected, word
        if expected != "*" and "$" not in word:
            assert subprocess.run(["bash", "-c", f"echo {word}"], capture_output=True,
                                  text=True).stdout.strip() == expected  # fmt: skip


def test_brace_expansion_that_runs_is_harmless(machine: Machine) -> None:
    """Braces naming ordinary files still run unasked, and bash reads only those."""
    assert_harmless(machine, ["cat {{README,NOTES}}.md", "ls {{src,.}}", "cat src/{{README.md,x}}",
                              "wc -l {{README.md,src/README.md}}"])  # fmt: skip


def test_a_command_name_from_brace_expansion_is_a_doubt() -> None:
    """`{rm,-rf,x}` runs `rm -rf x`: in denylist mode too it asks."""
    assert not parse_script("{rm,-rf,x}").confident
    assert (
        Machine(Path("/h"), Path("/w"), Path("/o")).decide("{{rm,-rf,x}}", mode="denylist").verdict
        == "ask"
    )


# -- a tilde after `=` in an argument ----------------------------------------------------
@pytest.mark.parametrize("mode", ["allowlist", "off"])
@pytest.mark.parametrize(
    "line", ["dd if=~/.config/gsv/secrets.toml status=none", "dd if=/x:~/.config/gsv/config.toml"]
)
def test_a_tilde_after_an_equals_sign_is_home(machine: Machine, line: str, mode: str) -> None:
    """bash expands `if=~/x` (an argument shaped like an assignment): refused in every mode."""
    if ":" not in line:
        assert SECRET in machine.bash(line)
    assert machine.decide(line, mode=mode).verdict == "deny"


# -- a `cd` that fails, or runs in a subshell, leaves the shell where it was -------------
STAYING_LINES = [
    ("cd {cfg} && (cd /tmp); cat secrets.toml", ""),
    ("cd {cfg} && cd /nowhere; cat secrets.toml", ""),
    ("cd {cfg} && cd /tmp | cat secrets.toml", ""),
    ("cd {cfg}; cd /tmp & cat config.toml", ""),
    ("cd {cfg}; cd /nowhere || cat secrets.toml", ""),
    ("cd {cfg}\ncd /nowhere\ncat secrets.toml", ""),
    ("cd {cfg} && cd /nowhere && true; cat secrets.toml", ""),
    ("(cd /tmp); cat .config/gsv/config.toml", "~"),
    ("cd /nowhere; grep -r TOKEN .config", "~"),
]


@pytest.mark.parametrize("mode", ["allowlist", "off"])
@pytest.mark.parametrize(("line", "workdir"), STAYING_LINES)
def test_a_cd_that_may_not_happen_keeps_the_old_directory(
    machine: Machine, line: str, workdir: str, mode: str
) -> None:
    """`(cd /tmp); cat secrets.toml` reads the secret in the directory the shell never
    left: the check judges words from every directory the shell may be in."""
    assert SECRET in machine.bash(line, workdir)
    assert machine.decide(line, workdir, mode=mode).verdict == "deny"


def test_a_cd_joined_by_and_is_followed_alone(machine: Machine) -> None:
    """After `cd X && ...` the chain runs in X only; ordinary lines still run."""
    assert machine.decide("cd /tmp && cat secrets.toml", str(machine.config)).verdict == "allow"
    assert machine.decide("cd /tmp && ls; cat secrets.toml", str(machine.config)).verdict == "deny"
    lines = ["cd src && cat README.md", "cd src; cat README.md", "(cd src && cat README.md); ls",
             "cd src | cat README.md", "cd /nowhere; cat README.md"]  # fmt: skip
    assert_harmless(machine, lines)


def test_the_prompt_names_the_privileged_wrapper(machine: Machine) -> None:
    """The reason names sudo, not the wrapper in front of it."""
    assert machine.decide("nice -n 5 sudo cat /etc/shadow").reason.startswith("sudo runs it")


@pytest.mark.parametrize("mode", ["allowlist", "off"])
@pytest.mark.parametrize(
    "line",
    [
        "{{ cd {cfg}; }}; cat secrets.toml",
        "if cd {cfg}; then cat secrets.toml; fi",
        "! cd {cfg}; cat config.toml",
        "while cd {cfg}; do cat secrets.toml; break; done",
    ],
)
def test_a_cd_after_a_reserved_word_is_followed(machine: Machine, line: str, mode: str) -> None:
    """`{ cd DIR; }` runs `cd DIR` in the shell itself: the reader reads the command after
    the reserved word (and still doubts the line)."""
    assert SECRET in machine.bash(line)
    assert machine.decide(line, mode=mode).verdict == "deny"


@pytest.mark.parametrize("mode", ["allowlist", "denylist", "off"])
def test_a_line_read_without_confidence_cannot_hide_a_secret(machine: Machine, mode: str) -> None:
    """A quote in a heredoc body joins the reader's idea of the line to the next line,
    which bash runs: a doubted line naming a secret anywhere is refused."""
    line = "cat <<EOF\nit's\nEOF\ncat ~/.config/gsv/config.toml #'"
    assert SECRET in machine.bash(line)
    assert machine.decide(line, mode=mode).verdict == "deny"
    assert machine.decide("cat <<EOF\nit's\nEOF\ncat README.md #'", mode=mode).verdict != "deny"


# -- the node, alone ----------------------------------------------------------------------
NODE_LINES = [
    "ls \r#; rm -f {out}/canary",
    "echo \x0c#; rm -f {out}/canary",
    "sudo -n cat /etc/hostname",
    "sort --files0-from=names0.lst",
    "cat {cfg}/{{secrets,x}}.toml",
    "builtin cd {cfg} && cat secrets.toml",
    "cd -P {cfg} && cat secrets.toml",
    "cat /proc/self/root{cfg}/./secrets.toml",
    "(cd /tmp); cat {cfg}/secrets.to{{m..m}}l",
]


@pytest.mark.timeout(120)
async def test_a_real_node_refuses_the_review_lines_without_an_approval(tmp_path: Path) -> None:
    """A real node daemon, with no gateway approval at all, refuses each line itself
    (its guard protects its own GSV_HOME): the canary lives, no secret comes back."""
    workspace, out = prepare(tmp_path)
    config = resolve_paths().config_dir
    config.mkdir(parents=True, exist_ok=True)
    (config / "secrets.toml").write_text(f"token = '{SECRET}'\n")
    (workspace / "names0.lst").write_text(f"{config / 'secrets.toml'}\0")
    lines = [line.format(out=out, cfg=config) for line in NODE_LINES]
    replies = await node_replies(workspace, lines)
    refused = [r for r in replies if "refused on this node" in str(r.get("error"))]
    assert len(refused) == len(lines), [r for r in replies if r not in refused]
    assert SECRET not in str(replies)
    assert (out / "canary").read_text() == "alive\n"

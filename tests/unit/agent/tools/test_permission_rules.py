"""Permission rules (N3): allow rules match only simple commands, deny wins, ask forces.

Every call goes through the real registry and a real shell in a temporary workspace; the
approver records whether it was asked, and says no, so a lookalike that slipped through
would be seen as "not asked" (and would run). Because the fix is taken out to watch these
fail, a lookalike that slips through must be harmless: the payloads only write canary files,
HOME is a temporary folder, and where bubblewrap works every command runs in the sandbox,
whose filesystem is read-only outside the workspace.
"""

from __future__ import annotations

import re

import pytest

from agent.kinds import SandboxMode
from agent.tools import ToolContext
from agent.tools.approvals import Verdict
from agent.tools.permissions import Permissions, project_rules_path
from agent.tools.rule_offer import offered_rule
from agent.tools.rules import RuleProblem, parse_rule
from agent.tools.sandbox import Sandbox, probe
from agent.tools.shell_words import simple_command

REAL = probe()
BOX = Sandbox(SandboxMode.AUTO, False, REAL) if REAL.works else None


@pytest.fixture(autouse=True)
def harmless_home(tmp_path, monkeypatch):
    """`~` in a command that slipped through is a throwaway folder, never the user's home."""
    home = tmp_path / "fakehome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


class Asked:
    """An approver that says `answer` and counts the questions."""

    def __init__(self, answer: Verdict | bool = False) -> None:
        self.answer = answer
        self.requests: list = []

    def __call__(self, request):
        self.requests.append(request)
        return self.answer


def context(ws, tmp_path, mode="ask", approve=None, **lists):
    permissions = Permissions(lists, home=tmp_path / "home", workspace=ws)
    return ToolContext(
        ws, approval_mode=mode, approve=approve, permissions=permissions, sandbox=BOX
    )


HOSTILE_LOOKALIKES = [
    "pytest x; touch pwned | sh",
    "pytest $(touch ~/pwned)",
    "pytest `id`",
    "pytest > ~/.bashrc",
    "FOO=1 pytest",
    "PYTHONPATH=/tmp/evil pytest -q",
    "pytest\ntouch pwned",
    "pytest x\n",
    "pytest x\\\ntouch pwned",
    "pytest & touch pwned",
    "pytest &",
    "pytest;",
    "(pytest)",
    "{ pytest; }",
    "pytest <<EOF\nx\nEOF",
    "pytest <<< x",
    "pytest && touch pwned",
    "pytest || touch pwned",
    "pytest | sh",
    "pytest |& sh",
    "pytest <(touch pwned)",
    "pytest >(touch pwned)",
    "pytest 2>&1",
    "pytest < /etc/passwd",
    "pytest >> log",
    "pytest &> out",
    'pytest "$(id)"',
    'pytest "`id`"',
    'pytest --x="$(id)"',
    "pytest $HOME",
    "pytest ${IFS}x",
    "pytest $((1+1))",
    "pytest $'\\x3b'rm",
    "pytest \\; touch pwned",
    "pytest # a comment hiding nothing",
    "pytest\rtouch pwned",
    "pytest\tx",
    "pytest x\x00touch pwned",
    "pytest x\uff1btouch pwned",  # full-width semicolon
    "pytest x\uff5csh",  # full-width vertical bar
    "pyt\u0435st x",  # Cyrillic e
    "pytest\u00a0x",  # non-breaking space
    "pytest x\u200btouch pwned",  # zero-width space
    "pytest \u202etouch pwned",  # right-to-left override
    "./pytest x",
    "/tmp/pytest x",
    '"pytest" x',
    "p''ytest x",
    "pytest *",
    "pytest {a,b}",
    "pytest ~root",
    "! pytest",
    "exec pytest",
    "env pytest",
    "time pytest",
    "sudo pytest",
    "coproc pytest",
    'pytest "unterminated',
    "if true; then pytest; fi",
    "for i in 1; do pytest; done",
    "pytest() { touch pwned; }; pytest",
    "[[ -f x ]] && pytest",
    'pytest -p "$(touch pwned)"',
]


def test_the_table_is_long_enough():
    assert len(HOSTILE_LOOKALIKES) >= 40


@pytest.mark.parametrize("command", HOSTILE_LOOKALIKES)
def test_a_hostile_lookalike_still_asks(command, reg, ws, tmp_path, harmless_home):
    """N3: `run_shell(pytest *)` allows none of these; each one is asked (and declined)."""
    approve = Asked(False)
    ctx = context(ws, tmp_path, approve=approve, allow=("run_shell(pytest *)",))
    result = reg.run("run_shell", {"command": command}, ctx)
    assert len(approve.requests) == 1, f"not asked: {command!r}"
    assert result.declined
    assert not (ws / "pwned").exists() and list(harmless_home.iterdir()) == []


@pytest.mark.parametrize("command", HOSTILE_LOOKALIKES)
def test_no_lookalike_is_a_simple_command_of_pytest(command):
    """N3: the parser's reading of each lookalike is never the words `pytest ...`."""
    words = simple_command(command)
    assert words is None or words[0] != "pytest"


@pytest.mark.parametrize(
    "command",
    ["pytest", "pytest -q tests/unit", 'pytest -k "a and b"', "pytest 'x y' --maxfail=1"],
)
def test_a_simple_command_matching_an_allow_rule_runs_unasked(command, reg, ws, tmp_path):
    """N3: the rule does what it says for the commands it names."""
    (ws / "pytest").write_text("")  # harmless: the command runs, whatever pytest does here
    approve = Asked(False)
    ctx = context(ws, tmp_path, approve=approve, allow=("run_shell(pytest *)",))
    reg.run("run_shell", {"command": command}, ctx)
    assert approve.requests == []


def test_an_exact_rule_allows_that_command_only(reg, ws, tmp_path):
    approve = Asked(False)
    ctx = context(ws, tmp_path, approve=approve, allow=("run_shell(git status)",))
    assert reg.run("run_shell", {"command": "git  status"}, ctx).declined is False
    assert approve.requests == []
    assert reg.run("run_shell", {"command": "git status --short"}, ctx).declined
    assert len(approve.requests) == 1


def test_deny_wins_over_allow_in_every_mode(reg, ws, tmp_path):
    """N3: a deny rule refuses even where an allow rule matches, and even in yolo."""
    for mode in ("ask", "auto-edit", "yolo"):
        approve = Asked(True)
        ctx = context(
            ws,
            tmp_path,
            mode=mode,
            approve=approve,
            allow=("run_shell(rm *)",),
            deny=("run_shell(rm -rf *)",),
        )
        (ws / "keep").write_text("x")
        result = reg.run("run_shell", {"command": "rm -rf keep"}, ctx)
        assert not result.ok and "deny: run_shell(rm -rf *)" in result.output
        assert approve.requests == [] and (ws / "keep").exists()


def test_deny_reaches_into_a_compound_command(reg, ws, tmp_path):
    """N3: `true; rm -rf keep` is denied by `run_shell(rm *)`, even in yolo."""
    (ws / "keep").write_text("x")
    ctx = context(ws, tmp_path, mode="yolo", deny=("run_shell(rm *)",))
    result = reg.run("run_shell", {"command": "true; rm -rf keep"}, ctx)
    assert not result.ok and (ws / "keep").exists()


def test_deny_on_a_path_refuses_reads_too(reg, ws, tmp_path):
    (ws / ".env").write_text("KEY=1\n")
    ctx = context(ws, tmp_path, mode="yolo", deny=("read_file(.env)",))
    result = reg.run("read_file", {"path": ".env"}, ctx)
    assert not result.ok and "KEY" not in result.output


def test_ask_forces_a_question_even_where_allow_and_the_mode_would_not(reg, ws, tmp_path):
    """N3: ask wins over allow, and asks in yolo too."""
    approve = Asked(False)
    ctx = context(
        ws,
        tmp_path,
        mode="yolo",
        approve=approve,
        allow=("run_shell(git *)",),
        ask=("run_shell(git push *)",),
    )
    assert reg.run("run_shell", {"command": "git push origin main"}, ctx).declined
    assert len(approve.requests) == 1 and approve.requests[0].always is None


def test_path_rules_are_gitignore_style_and_stay_inside_the_workspace(reg, ws, tmp_path):
    """N3: `edit_file(src/**)` allows src/ only; `../` and links out never match."""
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("a = 1\n")
    (ws / "b.py").write_text("b = 1\n")
    (ws / "src" / "out").symlink_to(tmp_path / "outside")
    approve = Asked(False)
    ctx = context(ws, tmp_path, approve=approve, allow=("write_file(src/**)",))
    assert reg.run("write_file", {"path": "src/a.py", "content": "a = 2\n"}, ctx).ok
    assert approve.requests == []
    assert reg.run("write_file", {"path": "b.py", "content": "b = 2\n"}, ctx).declined
    reg.run("write_file", {"path": "src/../../outside/x", "content": "x"}, ctx)
    reg.run("write_file", {"path": "src/out/secret.txt", "content": "x"}, ctx)
    assert (tmp_path / "outside" / "secret.txt").read_text() == "top secret\n"
    assert not (tmp_path / "outside" / "x").exists()


def test_an_allow_rule_never_covers_a_protected_path(reg, ws, tmp_path):
    """H3 holds under N3: `.git/**` asks though `write_file(**)` allows everything."""
    (ws / ".git").mkdir()
    approve = Asked(False)
    ctx = context(ws, tmp_path, approve=approve, allow=("write_file(**)",))
    assert reg.run("write_file", {"path": ".git/config", "content": "x"}, ctx).declined
    assert len(approve.requests) == 1


def test_a_tool_name_pattern_matches_tool_names():
    rule = parse_rule("mcp__git__*")
    assert rule.tool == "mcp__git__*" and rule.pattern is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("run_shell(* x)", "starts with *"),
        ("run_shell(pytest * x)", "* may only stand alone"),
        ("run_shell(pytest x*)", "* may only stand alone"),
        ("run_shell()", "empty parentheses"),
        ("run_shell(pytest 'x)", "does not split"),
        ("run shell", "is not a rule"),
        ("edit_file(!src/**)", "starts with !"),
        ("", "must be a string"),
    ],
)
def test_a_bad_rule_is_one_clause_saying_why(text, says):
    with pytest.raises(RuleProblem, match=re.escape(says)):
        parse_rule(text)


@pytest.mark.parametrize(
    ("command", "offer"),
    [
        ("pytest -q tests", "run_shell(pytest *)"),
        ("git status", "run_shell(git status *)"),
        ("git -c core.pager=x log", "run_shell(git -c core.pager=x log)"),
        ("bash -c 'rm -rf ~'", "run_shell(bash -c 'rm -rf ~')"),
        ("rm -rf build", "run_shell(rm -rf build)"),
        ("pytest x; rm y", None),
        ("FOO=1 pytest", None),
    ],
)
def test_the_offer_generalises_only_where_it_is_safe(command, offer):
    assert offered_rule("run_shell", command) == offer
    if offer is not None:
        parse_rule(offer)  # every offer is a rule that parses


def test_a_project_rule_is_kept_in_the_home_and_read_again(reg, ws, tmp_path):
    """N3: "always for this project" writes a rule under the app's home, never the repo."""
    home = tmp_path / "home"
    approve = Asked(Verdict(True, always=True, project=True))
    permissions = Permissions({}, home=home, workspace=ws)
    ctx = ToolContext(ws, approval_mode="ask", approve=approve, permissions=permissions)
    assert reg.run("run_shell", {"command": "echo one"}, ctx).ok
    assert approve.requests[0].rule == "run_shell(echo *)"
    path = project_rules_path(home, ws)
    assert path.is_file() and (path.stat().st_mode & 0o077) == 0
    assert list(ws.iterdir()) == []
    again = Permissions({}, home=home, workspace=ws)
    assert [(p.rule.text, p.decision.value, p.origin) for p in again.rules()] == [
        ("run_shell(echo *)", "allow", "project")
    ]
    later = ToolContext(ws, approval_mode="ask", approve=Asked(False), permissions=again)
    assert reg.run("run_shell", {"command": "echo two"}, later).ok
    assert reg.run("run_shell", {"command": "echo two; id"}, later).declined


def test_a_compound_command_gets_no_project_offer(reg, ws, tmp_path):
    approve = Asked(False)
    ctx = context(ws, tmp_path, approve=approve)
    reg.run("run_shell", {"command": "echo a && echo b"}, ctx)
    assert approve.requests[0].rule == "" and not approve.requests[0].project

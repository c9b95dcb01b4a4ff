"""The user's hooks in whole turns over real HTTP, on real SQLite, with real scripts (SPEC N4):
each event with a small script in tmp, what it says reaching the model or the user, a hook
that hangs or crashes named and never holding the turn, project hooks only after consent."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from waits import wait_until

from agent import events as ev
from agent.tools.approvals import Verdict

PY = sys.executable


def script(tmp_path: Path, name: str, body: str) -> str:
    """A python hook script in tmp; returns the command that runs it."""
    path = tmp_path / f"{name}.py"
    path.write_text("import json, sys, os, pathlib\nevent = json.load(sys.stdin)\n" + body)
    return f"{PY} {path}"


def shell(call_id: str, command: str) -> dict:
    return {"tool_calls": [{"id": call_id, "name": "run_shell", "arguments": {"command": command}}]}


def write(call_id: str, path: str, content: str) -> dict:
    args = {"path": path, "content": content}
    return {"tool_calls": [{"id": call_id, "name": "write_file", "arguments": args}]}


def tool_results(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def user_texts(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def hook_rows(events: list) -> list[dict]:
    return [dict(e.metadata) for e in events if isinstance(e, ev.DisplayRow) and e.kind == "hook"]


class Approver:
    """Says `answer` to every question and keeps what it was asked."""

    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.asked: list[str] = []

    def __call__(self, request):
        self.asked.append(request.detail.splitlines()[0])
        return Verdict(self.answer)


def test_n4_before_tool_deny_refuses_the_call_and_the_model_reads_the_reason(harness, tmp_path):
    """N4: exit 2 from a before_tool hook refuses the call; its stderr reaches the model."""
    deny = script(tmp_path, "deny", "sys.stderr.write('no shell on Fridays'); sys.exit(2)")
    harness.start(
        {"replies": [shell("s1", "touch marker"), {"text": "ok"}]},
        sandbox="off",
        hooks={"before_tool": [{"match": "run_shell", "command": deny, "name": "friday"}]},
    )
    agent = harness.agent()
    assert agent.run_turn("go").status == "ok"
    assert not (harness.workspace / "marker").exists()
    (result,) = tool_results(harness.bodies()[-1])
    assert "before_tool hook friday" in result and "no shell on Fridays" in result
    (row,) = hook_rows(harness.events)
    assert row["outcome"] == "denied" and "no shell on Fridays" in row["summary"]
    stored = [r for r in harness.rows(agent.session_id) if r["display_kind"] == "hook"]
    assert len(stored) == 1  # kept for resume


def test_n4_before_tool_allow_skips_the_dialog_but_not_a_deny_rule(harness, tmp_path):
    """N4: `decision: allow` runs a call the mode would ask about unasked; a deny rule still
    refuses, and a tool the hook does not match still asks."""
    allow = script(tmp_path, "allow", "print(json.dumps({'decision': 'allow'}))")
    harness.start(
        {
            "replies": [
                shell("s1", "touch allowed"),
                shell("s2", "rm -f keep"),
                write("w1", "asked.txt", "x"),
                {"text": "ok"},
            ]
        },
        agent={"approval": "ask"},
        sandbox="off",
        permissions={"deny": ["run_shell(rm *)"]},
        hooks={"before_tool": [{"match": "run_shell", "command": allow}]},
    )
    (harness.workspace / "keep").write_text("x")
    approver = Approver(answer=False)
    agent = harness.agent(approve=approver)
    assert agent.run_turn("go").status == "ok"
    assert (harness.workspace / "allowed").exists()
    assert (harness.workspace / "keep").exists()
    results = tool_results(harness.bodies()[-1])
    assert "deny: run_shell(rm *)" in results[1]
    assert len(approver.asked) == 1  # only the write, which the hook does not match, asks
    assert not (harness.workspace / "asked.txt").exists()


def test_n4_before_tool_ask_asks_even_in_yolo(harness, tmp_path):
    """N4: `decision: ask` puts the call to the user in a mode that asks nothing."""
    ask = script(tmp_path, "ask", "print(json.dumps({'decision': 'ask'}))")
    harness.start(
        {"replies": [shell("s1", "touch asked"), {"text": "ok"}]},
        sandbox="off",
        hooks={"before_tool": [{"match": "run_*", "command": ask}]},
    )
    approver = Approver(answer=False)
    agent = harness.agent(approve=approver)
    assert agent.run_turn("go").status == "ok"
    assert approver.asked == ["$ touch asked"]
    assert not (harness.workspace / "asked").exists()


def test_n4_a_hook_that_hangs_is_killed_at_its_timeout_and_the_turn_goes_on(harness, tmp_path):
    """N4: a hanging hook is named, its whole group killed at its timeout, the call runs."""
    pid_file = tmp_path / "hook.pid"
    hang = script(
        tmp_path,
        "hang",
        f"pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid()))\n"
        "import time\ntime.sleep(60)\n",
    )
    harness.start(
        {"replies": [shell("s1", "echo ran"), {"text": "ok"}]},
        sandbox="off",
        hooks={"before_tool": [{"command": hang, "timeout": 0.5, "name": "slow"}]},
    )
    agent = harness.agent()
    started = time.monotonic()
    assert agent.run_turn("go").status == "ok"
    assert time.monotonic() - started < 20
    (result,) = tool_results(harness.bodies()[-1])
    assert "ran" in result
    (row,) = hook_rows(harness.events)
    assert row["name"] == "slow" and row["outcome"] == "error"
    assert "timed out after 0.5 s" in row["summary"]
    pid = int(pid_file.read_text())
    wait_until(lambda: not running(pid), timeout=5, what="the hung hook killed")


def running(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting for its reaper does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def test_n4_a_hook_that_crashes_is_named_and_blocks_nothing(harness, tmp_path):
    """N4: a crashing hook (a traceback, exit 1) shows as a failed row; the call runs."""
    crash = script(tmp_path, "crash", "raise RuntimeError('boom')")
    harness.start(
        {"replies": [shell("s1", "echo ran"), {"text": "ok"}]},
        sandbox="off",
        hooks={"before_tool": [{"command": crash}]},
    )
    agent = harness.agent()
    assert agent.run_turn("go").status == "ok"
    assert "ran" in tool_results(harness.bodies()[-1])[0]
    (row,) = hook_rows(harness.events)
    assert row["name"] == "crash.py" and row["outcome"] == "error"
    assert row["summary"].startswith("failed (exit 1")


def test_n4_after_tool_output_reaches_the_model_with_the_result(harness, tmp_path):
    """N4: an after_tool hook (a linter after an edit) adds its output to the tool result."""
    lint = script(
        tmp_path,
        "lint",
        "path = event['tool_input']['path']\n"
        "assert event['tool_response']['ok'] is True\n"
        "print(f'{path}:1: 2 problems')\n",
    )
    harness.start(
        {"replies": [write("w1", "a.py", "x=1\n"), {"text": "ok"}]},
        hooks={
            "after_tool": [{"match": "edit_file | write_file", "command": lint, "name": "ruff"}]
        },
    )
    agent = harness.agent()
    assert agent.run_turn("go").status == "ok"
    (result,) = tool_results(harness.bodies()[-1])
    assert "[after_tool hook ruff]\na.py:1: 2 problems" in result
    (row,) = hook_rows(harness.events)
    assert row["summary"] == "a.py:1: 2 problems"


def test_n4_a_prompt_hook_adds_context_the_model_reads_and_the_user_does_not_see(harness, tmp_path):
    """N4: a prompt hook's stdout joins the message for the model; the row keeps the typed text."""
    ctx = script(tmp_path, "ctx", "print('branch: main; ' + event['prompt'].upper())")
    harness.start({"replies": [{"text": "ok"}]}, hooks={"prompt": [{"command": ctx}]})
    agent = harness.agent()
    assert agent.run_turn("fix it").status == "ok"
    (asked,) = user_texts(harness.bodies()[0])
    assert asked.startswith("fix it") and "branch: main; FIX IT" in asked
    (row,) = [r for r in harness.rows(agent.session_id) if r["role"] == "user"]
    assert row["display_metadata"]["shown"] == "fix it"


def test_n4_a_prompt_hook_blocks_the_message_and_the_text_comes_back(harness, tmp_path):
    """N4: exit 2 from a prompt hook: no request, the reason told, the typed text given back."""
    block = script(tmp_path, "block", "sys.stderr.write('no secrets in prompts'); sys.exit(2)")
    harness.start({"replies": [{"text": "never"}]}, hooks={"prompt": [{"command": block}]})
    agent = harness.agent()
    result = agent.run_turn("my key is hunter2")
    assert result.status == "error" and result.unsent == "my key is hunter2"
    assert "no secrets in prompts" in (result.error or "")
    assert harness.bodies() == []
    errors = [e for e in harness.events if isinstance(e, ev.TurnError)]
    assert errors and "prompt hook block.py" in errors[-1].message


def test_n4_turn_end_sends_the_agent_back_twice_then_lets_it_finish(harness, tmp_path):
    """N4: a turn_end hook that fails twice sends the agent back with its feedback twice."""
    count = tmp_path / "count"
    tests = script(
        tmp_path,
        "tests",
        f"p = pathlib.Path({str(count)!r})\n"
        "n = int(p.read_text()) + 1 if p.exists() else 1\n"
        "p.write_text(str(n))\n"
        "if n <= 2:\n    sys.stderr.write(f'FAILED test_{n}'); sys.exit(2)\n",
    )
    harness.start(
        {"replies": [{"text": "done 1"}, {"text": "done 2"}, {"text": "done 3"}]},
        hooks={"turn_end": [{"command": tests, "name": "pytest"}]},
    )
    agent = harness.agent()
    result = agent.run_turn("fix the tests")
    assert result.status == "ok" and result.text == "done 3"
    bodies = harness.bodies()
    assert len(bodies) == 3
    assert "FAILED test_1" in user_texts(bodies[1])[-1]
    assert "FAILED test_2" in user_texts(bodies[2])[-1]
    outcomes = [r["outcome"] for r in hook_rows(harness.events)]
    assert outcomes == ["denied", "denied", "ok"]


def test_n4_turn_end_stops_sending_the_agent_back_at_the_limit(harness, tmp_path):
    """N4: `hooks.turn_end_limit` bounds how often the agent is sent back; then it ends."""
    never = script(tmp_path, "never", "sys.stderr.write('still red'); sys.exit(2)")
    harness.start(
        {"replies": [{"text": "a"}, {"text": "b"}, {"text": "c"}, {"text": "d"}]},
        hooks={"turn_end": [{"command": never}], "turn_end_limit": 2},
    )
    agent = harness.agent()
    result = agent.run_turn("go")
    assert result.status == "ok" and result.text == "c"
    assert len(harness.bodies()) == 3
    notices = [e.text for e in harness.events if isinstance(e, ev.Notice)]
    assert any("turn_end_limit" in text for text in notices)


def test_n4_session_start_adds_context_once_per_session(harness, tmp_path):
    """N4: session_start runs before a session's first turn; its stdout reaches the model."""
    start = script(tmp_path, "start", "print('source=' + event['source'])")
    harness.start(
        {"replies": [{"text": "one"}, {"text": "two"}]},
        hooks={"session_start": [{"command": start, "name": "env"}]},
    )
    agent = harness.agent()
    assert agent.run_turn("first").status == "ok"
    assert agent.run_turn("second").status == "ok"
    first, second = harness.bodies()
    assert "[session_start hook env]\nsource=new" in user_texts(first)[0]
    assert all("session_start" not in text for text in user_texts(second)[1:])
    assert len(hook_rows(harness.events)) == 1


def test_n4_project_hooks_run_only_after_consent_and_ask_again_when_changed(harness, tmp_path):
    """N4: `.hermes-tui/hooks.yaml` does not run until allowed (said once); once allowed it
    runs; a changed command list does not run until allowed again."""
    marker = tmp_path / "ran"
    first = script(tmp_path, "first", f"pathlib.Path({str(marker)!r}).write_text('first')")
    second = script(tmp_path, "second", f"pathlib.Path({str(marker)!r}).write_text('second')")
    folder = harness.workspace / ".hermes-tui"
    folder.mkdir()
    (folder / "hooks.yaml").write_text(json.dumps({"prompt": [{"command": first}]}))
    harness.start({"replies": [{"text": "a"}, {"text": "b"}, {"text": "c"}, {"text": "d"}]})
    agent = harness.agent()
    assert agent.run_turn("one").status == "ok"
    assert agent.run_turn("two").status == "ok"
    assert not marker.exists()
    told = [e.text for e in harness.events if isinstance(e, ev.Notice) and "not allowed" in e.text]
    assert len(told) == 1 and first in told[0]

    assert "Allowed this project's 1 hook(s)" in agent.hooks.allow_project()
    assert agent.run_turn("three").status == "ok"
    assert marker.read_text() == "first"

    (folder / "hooks.yaml").write_text(json.dumps({"prompt": [{"command": second}]}))
    again = harness.agent()
    assert again.run_turn("four").status == "ok"
    assert marker.read_text() == "first"  # the changed list did not run
    told = [e.text for e in harness.events if isinstance(e, ev.Notice) and "not allowed" in e.text]
    assert len(told) == 2 and second in told[-1]
    consent = agent.hooks.consent.path
    assert harness.home in consent.parents and harness.workspace not in consent.parents


def test_n4_what_hooks_give_the_model_is_redacted(harness, tmp_path):
    """N4, H5: a configured key a hook prints never reaches the model, nor the store."""
    key = "sk-test-key-123456"  # the scripted provider's key (helpers.write_config)
    leak = script(
        tmp_path,
        "leak",
        f"sys.stderr.write('token {key}') if event['event'] == 'turn_end' "
        f"and not event['sent_back'] else print('ctx {key}')\n"
        "sys.exit(2 if event['event'] == 'turn_end' and not event['sent_back'] else 0)\n",
    )
    harness.start(
        {"replies": [write("w1", "a.txt", "x"), {"text": "a"}, {"text": "b"}]},
        hooks={
            "prompt": [{"command": leak}],
            "after_tool": [{"command": leak}],
            "turn_end": [{"command": leak}],
        },
    )
    agent = harness.agent()
    assert agent.run_turn("go").status == "ok"
    bodies = harness.bodies()
    assert len(bodies) == 3 and "token" in str(bodies[-1]) and "ctx" in str(bodies[0])
    assert key not in str(bodies)
    assert key not in str(harness.rows(agent.session_id))


def test_n4_a_hooks_allow_never_skips_asking_for_a_protected_path(harness, tmp_path):
    """N4, H3: `decision: allow` for every tool: a write to `.envrc` still asks."""
    allow = script(tmp_path, "allow", "print(json.dumps({'decision': 'allow'}))")
    harness.start(
        {"replies": [write("w1", "notes.txt", "x"), write("w2", ".envrc", "x"), {"text": "ok"}]},
        agent={"approval": "ask"},
        hooks={"before_tool": [{"command": allow}]},
    )
    approver = Approver(answer=False)
    agent = harness.agent(approve=approver)
    assert agent.run_turn("go").status == "ok"
    assert (harness.workspace / "notes.txt").exists()
    assert len(approver.asked) == 1 and not (harness.workspace / ".envrc").exists()

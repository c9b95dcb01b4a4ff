"""Permission rules in whole turns over real HTTP (SPEC N3): a command an allow rule names
runs unasked, a compound one that starts the same way asks, and a deny rule is final."""

from __future__ import annotations

import pytest

from agent.tools.approvals import Verdict


class Approver:
    """Answers no to every question and keeps the commands it was asked about."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, request):
        self.asked.append(request.detail.splitlines()[0])
        return Verdict(False)


def shell(call_id: str, command: str) -> dict:
    return {"tool_calls": [{"id": call_id, "name": "run_shell", "arguments": {"command": command}}]}


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_an_allowed_command_runs_unasked_and_a_compound_one_asks(harness, wire):
    """N3: `run_shell(echo *)` lets `echo one` run; `echo two && touch pwned` is asked."""
    script = {
        "replies": [
            shell("s1", "echo one"),
            shell("s2", "echo two && touch pwned"),
            shell("s3", "rm -f keep"),
            {"text": "done"},
        ]
    }
    (harness.workspace / "keep").write_text("x")
    harness.start(
        script,
        wire=wire,
        agent={"approval": "ask"},
        sandbox="off",
        permissions={
            "allow": ["run_shell(echo *)", "run_shell(rm *)"],
            "deny": ["run_shell(rm *)"],
        },
    )
    approver = Approver()
    agent = harness.agent(approve=approver)
    result = agent.run_turn("go")
    assert result.status == "ok", result.error
    assert approver.asked == ["$ echo two && touch pwned"]
    results = [m for m in agent.messages if m.role == "tool"]
    assert "one" in results[0].content
    assert not (harness.workspace / "pwned").exists()
    assert "deny: run_shell(rm *)" in results[2].content
    assert (harness.workspace / "keep").exists()

"""A hostile model after an "always": near-copies of an approved command still ask (H2)."""

from __future__ import annotations

import pytest

from agent.tools import ToolContext, default_registry
from agent.tools.approvals import Verdict

LOOKALIKES = [
    "ls ",
    " ls",
    "ls;rm victim",
    "ls && rm victim",
    "ls\nrm victim",
    "ls # harmless\nrm victim",
    "ls $(rm victim)",
    "ls `rm victim`",
    "ls | sh -c 'rm victim'",
    "LS",
]


@pytest.mark.parametrize("command", LOOKALIKES)
def test_always_for_one_command_never_covers_a_lookalike(tmp_path, command):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "victim").write_text("keep me\n")
    asked: list[str] = []

    def approve(request):
        asked.append(request.detail)
        # The user says "always" to the first `ls` and no to everything after it.
        return Verdict(True, always=True) if len(asked) == 1 else Verdict(False)

    registry = default_registry()
    ctx = ToolContext(workspace, approval_mode="ask", approve=approve)
    assert registry.run("run_shell", {"command": "ls"}, ctx).ok
    result = registry.run("run_shell", {"command": command}, ctx)
    assert result.declined, f"{command!r} ran on the strength of an always for 'ls'"
    assert len(asked) == 2
    assert (workspace / "victim").read_text() == "keep me\n"

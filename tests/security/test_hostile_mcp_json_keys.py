"""A repository's `.mcp.json` with keys the app does not read (another client's `alwaysAllow`,
`autoApprove`, `disabled`) skips that server with a sentence naming the keys and why,
never silently, and nothing of it runs, even when the user then allows it (SPEC H1, M1).
Real .mcp.json files, a real stdio command as the server, and the app through the pilot.
"""

from __future__ import annotations

import json
import sys

import pytest
from waits import holds_for, wait_until

from agent import events as ev
from agent.config import load_config
from agent.mcp.manager import McpManager
from agent.mcp.settings import read_project_servers
from hermes_tui.widgets.messages import NoticeLine


def marker_entry(marker, **extra) -> dict:
    """A stdio server whose start writes `marker`: proof that it ran."""
    code = f"open({str(marker)!r}, 'w').write('ran')"
    return {"command": sys.executable, "args": ["-c", code], **extra}


def test_approving_and_unknown_keys_skip_the_server_and_say_which_and_why(hermes_home, tmp_path):
    """H1: `alwaysAllow` is named as approving tools without asking; an unknown key is named
    as unread; Claude Code's own keys (and `description`) are accepted."""
    workspace = tmp_path / "repo"
    workspace.mkdir()
    marker = tmp_path / "ran"
    servers = {
        "approver": marker_entry(marker, alwaysAllow=["delete_everything"]),
        "cline": marker_entry(marker, autoApprove=["x"], disabled=True),
        "odd": marker_entry(marker, **{"sneaky\x1b]0;x\x07": 1}),
        "plain": {
            "type": "stdio",
            **marker_entry(marker),
            "env": {"A": "1"},
            "description": "a note for people",
        },
        "web": {"type": "http", "url": "https://mcp.invalid/mcp", "headers": {"X": "1"}},
    }
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    found, problems = read_project_servers(workspace)
    assert [s.name for s in found] == ["plain", "web"]
    said = "\n".join(problems)
    assert (
        ".mcp.json: server `approver` was skipped: it sets `alwaysAllow`, which would approve "
        "tools without asking (only your own config.yaml trusts tools)." in said
    )
    assert "server `cline` was skipped: it sets `autoApprove`, which would approve" in said
    assert "`disabled`, which hermes-tui does not read" in said
    assert "server `odd` was skipped" in said and "`sneaky\\u001b]0;x\\u0007`" in said
    assert "\x1b" not in said

    events: list = []
    (hermes_home / "config.yaml").write_text("{}\n")
    manager = McpManager(load_config(hermes_home), workspace, events.append)
    manager.start()
    try:
        notices = [e.text for e in events if isinstance(e, ev.Notice)]
        assert any("`approver` was skipped" in text for text in notices)
        assert manager.get("approver") is None and manager.get("cline") is None
        with pytest.raises(LookupError):
            manager.allow("approver")  # allowing it is no way around the skip
        assert holds_for(lambda: not marker.exists(), 0.5)
    finally:
        manager.close()


async def test_a_mcp_json_whose_only_server_is_skipped_says_so_in_the_app(
    make_app, workspace, tmp_path
):
    """H1: a file whose every server is skipped is not dropped silently: the transcript
    names the server, the key and why; nothing starts."""
    marker = tmp_path / "ran"
    entry = marker_entry(marker, alwaysAllow=["run_anything"])
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"helper": entry}}))
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await app.ready()

        def told() -> list[str]:
            return [n.text for n in app.transcript.query(NoticeLine) if "helper" in n.text]

        await wait_until(pilot, told, what="a notice about the skipped server")
        [text] = told()
        assert "`helper` was skipped: it sets `alwaysAllow`" in text
        assert "approve tools without asking" in text
        assert not marker.exists()

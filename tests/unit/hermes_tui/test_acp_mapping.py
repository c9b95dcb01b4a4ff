"""E1: the pure parts of the ACP front end: approvals as permission options (H3: a protected
path never offers "always"), the client's pick as a Verdict, a diff as ACP's two sides."""

from __future__ import annotations

from pathlib import Path

from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

from agent.tools.approvals import AlwaysScope
from agent.tools.diffs import file_diff
from agent.tools.registry import ApprovalRequest
from hermes_tui.acp.permissions import options_for, verdict_of
from hermes_tui.acp.updates import diff_content, hunk_sides


def _picked(option_id: str) -> RequestPermissionResponse:
    return RequestPermissionResponse(
        outcome=AllowedOutcome(outcome="selected", option_id=option_id)
    )


def test_a_protected_path_is_asked_without_an_always():
    """E1, H3: allow once and reject only, even when a scope exists."""
    scope = AlwaysScope("write_file")
    request = ApprovalRequest("write_file", "write .git/hooks/x", "", protected=True, always=scope)
    assert [o.kind for o in options_for(request)] == ["allow_once", "reject_once"]
    assert verdict_of(_picked("allow-always"), request).approved is False


def test_the_clients_pick_is_the_verdict():
    """E1: once, always (remembered), reject, a cancelled ask and an unoffered id."""
    request = ApprovalRequest("run_shell", "ls", "", always=AlwaysScope("run_shell", "ls"))
    assert [o.kind for o in options_for(request)] == ["allow_once", "allow_always", "reject_once"]
    once, always = (
        verdict_of(_picked("allow-once"), request),
        verdict_of(_picked("allow-always"), request),
    )
    assert (once.approved, once.always) == (True, False)
    assert (always.approved, always.always) == (True, True)
    assert verdict_of(_picked("reject"), request).approved is False
    assert verdict_of(_picked("made-up"), request).approved is False
    cancelled = RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
    assert verdict_of(cancelled, request).approved is False


def test_a_plan_is_approved_into_a_mode():
    """E1, N1: a plan's options switch to ask or auto-edit, or keep planning."""
    request = ApprovalRequest("propose_plan", "plan", "1. do it", plan=True)
    assert verdict_of(_picked("plan-auto-edit"), request).mode == "auto-edit"
    assert verdict_of(_picked("plan-ask"), request).mode == "ask"
    assert verdict_of(_picked("reject"), request).approved is False


def test_a_diff_becomes_the_old_and_new_side_of_its_hunks():
    """E1, X1: the hunks' lines on each side, the path absolute in the workspace."""
    diff = file_diff("a\nb\nc\n", "a\nB\nc\nd\n", "f.txt")
    assert hunk_sides(diff.text) == ("a\nb\nc\n", "a\nB\nc\nd\n")
    content = diff_content(diff, Path("/ws"))
    assert (content.path, content.old_text, content.new_text) == (
        "/ws/f.txt",
        "a\nb\nc\n",
        "a\nB\nc\nd\n",
    )
    created = diff_content(file_diff("", "new\n", "n.txt"), Path("/ws"))
    assert created.old_text is None and created.new_text == "new\n"


def test_prompt_blocks_become_the_turns_text(tmp_path):
    """E1, P2: a link to a workspace file is an @mention; an embedded resource follows the
    text; an image or an empty prompt is refused in one sentence."""
    import pytest
    from acp import RequestError, resource_link_block, text_block
    from acp.schema import EmbeddedResourceContentBlock, ImageContentBlock, TextResourceContents

    from hermes_tui.acp.prompt_text import prompt_text

    (tmp_path / "src").mkdir()
    link = resource_link_block("app.py", (tmp_path / "src" / "app.py").as_uri())
    outside = resource_link_block("x", "https://example.org/x")
    embedded = EmbeddedResourceContentBlock(
        type="resource", resource=TextResourceContents(uri="file:///n.txt", text="note")
    )
    text = prompt_text([text_block("look at"), link, outside, embedded], tmp_path)
    assert text.startswith("look at\n\n@src/app.py\n\nhttps://example.org/x\n\n<context")
    assert "note" in text
    with pytest.raises(RequestError, match="not image content"):
        prompt_text([ImageContentBlock(type="image", data="", mime_type="image/png")], tmp_path)
    with pytest.raises(RequestError, match="empty"):
        prompt_text([text_block("  ")], tmp_path)

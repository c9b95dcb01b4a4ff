"""`/export` keeps a proposed plan word for word, with how it was answered (N1)."""

from __future__ import annotations

from hermes_tui.export import to_markdown

PLAN = "## Plan\n\n1. Write `notes.txt`.\n2. Check it."


def test_the_plan_is_exported_word_for_word():
    """N1: the Markdown export carries the plan's text and its answer."""
    call = {"id": "p1", "name": "propose_plan", "arguments": {"plan": PLAN}}
    meta = {"ok": True, "plan": {"text": PLAN, "answer": "approved", "mode": "ask"}}
    rows = [
        {"role": "user", "content": "plan it"},
        {"role": "assistant", "content": "Here.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "p1", "content": "approved", "display_metadata": meta},
    ]
    text = to_markdown(
        {"id": "s1", "title": "t"}, rows, summary=lambda name, args: name, marker=lambda *_: None
    )
    assert "**Plan** (approved)" in text
    assert f"```markdown\n{PLAN}\n```" in text

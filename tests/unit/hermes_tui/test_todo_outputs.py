"""The todo list outside the panel (N2): a line on stderr in plain `hermes-tui run` output
each time it changes, and a task list in the Markdown `/export`."""

from __future__ import annotations

from agent import events as ev
from hermes_tui.export import to_markdown
from hermes_tui.headless import _Printer

ITEMS = (
    {"text": "read the parser", "status": "done"},
    {"text": "split the lexer\nout", "status": "in_progress"},
    {"text": "run the tests", "status": "pending"},
)


def test_n2_plain_run_output_says_the_list_changed_in_one_line(capsys):
    """N2: `todo 1/3 ▶ split the lexer out` on stderr, the answer's stdout untouched."""
    printer = _Printer(as_json=False)
    printer(ev.TodosChanged(ITEMS, 1, 3))
    printer(ev.TodosChanged((), 0, 0))
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "todo 1/3 ▶ split the lexer out\ntodo: the list is empty\n"


def test_n2_the_export_carries_the_list_as_last_written():
    """N2: the Markdown export opens with the list: progress, then one task line an item."""
    session = {"id": "s1", "title": "t", "metadata": {"todos": list(ITEMS)}}
    text = to_markdown(session, [], summary=lambda name, args: name, marker=lambda *_: None)
    assert (
        "**Todo** 1/3\n\n- [x] read the parser\n- [~] split the lexer out\n- [ ] run the tests"
        in text
    )
    bare = to_markdown({"id": "s1"}, [], summary=lambda n, a: n, marker=lambda *_: None)
    assert "Todo" not in bare

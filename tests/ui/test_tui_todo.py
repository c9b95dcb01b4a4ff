"""The model's todo list in the app (N2): the status panel shows it with its progress and
marks, the one-line status when the panel is hidden, a new session has none, a resumed one
shows its own, and the model's words are made terminal-safe."""

from __future__ import annotations

from ui.tui_helpers import reply, run_turn, type_keys
from waits import wait_until

PLAN = [
    {"text": "read the parser", "status": "done"},
    {"text": "split the lexer out", "status": "in_progress"},
    {"text": "run the tests", "status": "pending"},
]


def todo_reply(todos, call_id: str = "t1") -> dict:
    call = {"id": call_id, "name": "todo_write", "arguments": {"todos": todos}}
    return reply("Planning.", tool_calls=[call])


async def test_n2_the_panel_and_the_line_show_the_list_and_a_resume_brings_it_back(
    make_app, scripted_in_process
):
    """N2: `Todo 1/3` and the items with ☑/▶/☐; f3's one-line status keeps the progress and
    the item in progress; /new shows none; resuming the session shows its list again."""
    server = scripted_in_process({"replies": [todo_reply(PLAN), reply("On it."), reply("Hi.")]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        await run_turn(pilot, "refactor the parser")
        panel = app.status_panel
        await wait_until(pilot, lambda: "Todo 1/3" in panel.text, what="the todo list")
        assert "☑ read the parser ▶ split the lexer out ☐ run the tests" in panel.text
        await type_keys(pilot, "f3")
        await wait_until(pilot, lambda: app.status_line.display, what="the one-line status")
        assert "todo 1/3 ▶ split the lexer out" in app.status_line.text
        await type_keys(pilot, "f3")
        listed = app.agent.session_id
        await app.submit("/new")
        await run_turn(pilot, "hello")
        await wait_until(pilot, lambda: "Todo" not in panel.text, what="no list in a new one")
        assert "todo" not in app.status_line.text
        await app.resume_session(listed)
        await wait_until(pilot, lambda: "Todo 1/3" in panel.text, what="the list on resume")
        assert "▶ split the lexer out" in panel.text


async def test_n2_a_long_list_shows_what_is_left_and_hidden_characters_are_shown(
    make_app, scripted_in_process
):
    """N2, H1: of a long list the items not done yet show, the rest counted; an escape
    sequence in an item is shown, never sent to the terminal."""
    todos = [{"text": f"step {n}", "status": "done"} for n in range(6)]
    todos += [{"text": f"later {n}", "status": "pending"} for n in range(9)]
    todos[6] = {"text": "\x1b[2Jwipe", "status": "in_progress"}
    server = scripted_in_process({"replies": [todo_reply(todos), reply("On it.")]})
    app = make_app(server)
    async with app.run_test(size=(120, 50)) as pilot:
        await app.ready()
        await run_turn(pilot, "a long job")
        panel = app.status_panel
        await wait_until(pilot, lambda: "Todo 6/15" in panel.text, what="the todo list")
        assert "step 0" not in panel.text and "and 7 more" in panel.text
        assert "\x1b" not in panel.text and "wipe" in panel.text
        assert "\x1b" not in app.status_line.text

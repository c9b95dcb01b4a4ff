"""Z1 in a real terminal: what is typed after Enter survives a send into a long session."""

from __future__ import annotations

import asyncio

import pytest
from e2e.terminal import needs_tmux

from agent.scripted.script import RequestInfo

pytestmark = [needs_tmux, pytest.mark.e2e]

LAST_WORDS = "word4_699"
"""The end of the newest stored answer: on screen once the resumed session is shown."""


def long_answer(n: int) -> str:
    """A 300-line Markdown answer with a code block every 30 lines."""
    lines = [f"# Answer {n}", ""]
    for i in range(300):
        if i % 30 == 0:
            lines += ["```python", *[f"def f{n}_{i}_{j}(x):  return x * {j}" for j in range(8)]]
            lines.append("```")
        else:
            lines.append(f"- point {i} of answer {n}: some **bold** text, `code` and words")
    return "\n".join(lines)


async def seed_long_session(home, workspace) -> str:
    """Two 300-line answers and five long streamed ones (14 messages), as the issue had."""
    from storage.db import SessionDB

    db = await SessionDB.open(home / "state.db")
    try:
        session = await db.create_session(
            model="test-model", provider="scripted", workspace=str(workspace), title="long"
        )
        answers = [long_answer(1), long_answer(2)]
        answers += [" ".join(f"word{n}_{i}" for i in range(700)) for n in range(5)]
        for i, answer in enumerate(answers):
            await db.add_message(session["id"], {"role": "user", "content": f"question {i}"})
            await db.add_message(session["id"], {"role": "assistant", "content": answer})
    finally:
        await db.close()
    return session["id"]


def test_text_typed_right_after_enter_in_a_long_session_is_kept(
    terminal, model_server, workspace, hermes_home
):
    """Z1: resume a long session, type `bigping 1`, Enter and `lost1` in one burst; after
    the turn `lost1` is still in the composer and the model got `bigping 1` once."""
    server = model_server({"replies": [{"text": "PONG-ONE done"}]})
    session_id = asyncio.run(seed_long_session(hermes_home, workspace))
    terminal.start_app(workspace, ["--resume", session_id])
    terminal.wait_for(LAST_WORDS, timeout=60)
    terminal.send("bigping 1", "Enter", "lost1")
    terminal.wait_for("PONG-ONE done", "● idle", timeout=60)
    composer = [line for line in terminal.screen().splitlines() if "lost1" in line]
    assert composer, terminal.screen()
    bodies = server.request_bodies()
    assert [RequestInfo.from_body("openai", body).last_user_text for body in bodies] == [
        "bigping 1"
    ]

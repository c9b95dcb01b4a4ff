"""Slash command handlers on their own, each run with a small context object (U2)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from agent.config import ConfigError
from agent.inbox import InputQueue
from hermes_tui import commands
from hermes_tui.turns import COMPACT_BUSY, WorkKind


class FakeTurns:
    """What the handlers ask of the turn flow, recorded."""

    def __init__(self, busy: bool = False) -> None:
        self.busy = busy
        self.queue = InputQueue()
        self.sent: list[tuple[str, str]] = []
        self.begun: list[tuple[WorkKind, str, Any]] = []
        self.stopped = False

    async def send(self, text: str, mode: str) -> None:
        self.sent.append((text, mode))

    def stop(self) -> None:
        self.stopped = True

    async def refused(self, what: str) -> bool:
        return self.busy

    async def begin(self, kind: WorkKind, text: str, work: Any) -> None:
        self.begun.append((kind, text, work))

    def remove_queued(self, item_id: int) -> None:
        self.queue.remove(item_id)


class FakeContext:
    """A CommandContext with an agent and a turn flow that only record what they are asked."""

    def __init__(self, *, busy: bool = False, session_id: str | None = "s1") -> None:
        self.config = SimpleNamespace(providers={"openai": None}, config_path="config.yaml")
        self.agent = SimpleNamespace(
            session_id=session_id, model_ref="openai:gpt-4.1", compacted=[], interrupted=False
        )
        self.agent.compact = lambda focus: self.agent.compacted.append(focus)
        self.turns = FakeTurns(busy)
        self.keys = SimpleNamespace(shown=lambda binding_id: "f5")
        self.notices: list[tuple[str, str]] = []

    async def notice(self, text: str, level: str = "info") -> None:
        self.notices.append((text, level))


async def test_steer_needs_text_and_sends_it_as_a_steer():
    ctx = FakeContext()
    await commands.run(ctx, "/steer")
    assert ctx.notices == [("Usage: /steer <text>.", "error")] and ctx.turns.sent == []
    await commands.run(ctx, "/steer /stop and explain")
    assert ctx.turns.sent == [("/stop and explain", "steer")]


async def test_queue_edits_by_position_and_says_when_there_is_none():
    ctx = FakeContext()
    ctx.turns.queue.push("alpha")
    await commands.run(ctx, "/queue rm 3")
    assert ctx.notices == [("No queued item 3: the queue has 1.", "error")]
    await commands.run(ctx, "/queue rm 1")
    assert len(ctx.turns.queue) == 0


async def test_compact_runs_as_work_of_its_own_and_only_when_it_can():
    busy = FakeContext(busy=True)
    await commands.run(busy, "/compact")
    assert busy.notices == [(COMPACT_BUSY, "warning")] and busy.turns.begun == []
    fresh = FakeContext(session_id=None)
    await commands.run(fresh, "/compact")
    assert fresh.notices == [("Nothing to compact yet: send a message first.", "info")]
    ctx = FakeContext()
    await commands.run(ctx, "/compact the tests")
    [(kind, text, work)] = ctx.turns.begun
    assert (kind, text) == (WorkKind.COMPACTION, "")
    work()  # what the worker thread runs
    assert ctx.agent.compacted == ["the tests"]


async def test_a_bad_model_is_its_config_sentence():
    ctx = FakeContext()

    def refuse(ref: str) -> None:
        raise ConfigError(f"Unknown provider {ref!r}.")

    ctx.agent.set_model = refuse
    await commands.run(ctx, "/model nope:x")
    assert ctx.notices == [("Unknown provider 'nope:x'.", "error")]


async def test_stop_title_and_unknown_commands():
    ctx = FakeContext(session_id=None)
    await commands.run(ctx, "/stop")
    assert ctx.turns.stopped
    await commands.run(ctx, "/title My work")
    assert ctx.notices[-1] == ("No session yet: send a message first.", "error")
    await commands.run(ctx, "/frobnicate now")
    assert ctx.notices[-1] == ("Unknown command /frobnicate: /help lists the commands.", "error")


def test_the_table_lists_every_command_in_help_order():
    names = [entry.name for entry in commands.COMMANDS]
    assert names == [
        "steer",
        "queue",
        "stop",
        "redirect",
        "compact",
        "new",
        "resume",
        "continue",
        "sessions",
        "model",
        "mode",
        "title",
        "undo",
        "redo",
        "rewind",
        "diff",
        "fork",
        "export",
        "context",
        "init",
        "permissions",
        "hooks",
        "budget",
        "usage",
        "mcp",
        "ps",
        "agents",
        "theme",
        "help",
        "quit",
    ]
    assert all(entry.run.__doc__ for entry in commands.COMMANDS)

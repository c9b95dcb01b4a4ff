"""Widget-level tests: the bridge's per-frame batching and the transcript fed with events."""

from __future__ import annotations

import threading

from textual.app import App, ComposeResult
from ui.tui_helpers import reply, type_keys
from waits import wait_until

from agent import events as ev
from hermes_tui import commands
from hermes_tui.bridge import AgentEvents, Bridge
from hermes_tui.widgets.markers import Marker, marker_text
from hermes_tui.widgets.messages import AnswerBlock
from hermes_tui.widgets.reasoning import ReasoningBlock
from hermes_tui.widgets.tool_block import OUTPUT_CAP_CHARS, ToolBlock, cap_output
from hermes_tui.widgets.transcript import PlainRows, Transcript


class StoredRows:
    """A HistorySource over a list of stored rows (one page)."""

    def __init__(self, rows: list[dict]) -> None:
        self.rows = [{"seq": seq, **row} for seq, row in enumerate(rows, 1)]

    async def page(self, *, before_seq=None, after_seq=None, limit: int) -> list[dict]:
        return self.rows if before_seq is None and after_seq is None else []

    async def last_user_seq(self) -> int | None:
        return None


class TranscriptApp(App):
    """A bare app around one transcript, fed through a real Bridge."""

    def __init__(self) -> None:
        super().__init__()
        self.bridge = Bridge(self)
        self.batches: list[list[ev.AgentEvent]] = []

    def compose(self) -> ComposeResult:
        yield Transcript()

    async def on_agent_events(self, message: AgentEvents) -> None:
        self.batches.append(message.events)
        for event in message.events:
            await self.query_one(Transcript).apply(event)


async def test_bridge_coalesces_a_fast_stream_into_few_messages():
    app = TranscriptApp()
    async with app.run_test() as pilot:

        def stream() -> None:
            app.bridge(ev.RequestStarted(1, "m", "p"))
            for i in range(2000):
                app.bridge(ev.TextDelta(f"{i} "))
            app.bridge(ev.AssistantMessage(" ".join(str(i) for i in range(2000))))

        thread = threading.Thread(target=stream)
        thread.start()
        thread.join()
        await wait_until(pilot, lambda: app.query(AnswerBlock) and not app.bridge.pending)
        streamed = [e for batch in app.batches for e in batch if isinstance(e, ev.TextDelta)]
        assert "".join(e.text for e in streamed) == "".join(f"{i} " for i in range(2000))
        assert len(app.batches) < 50
        assert app.query_one(AnswerBlock).source.startswith("0 1 2")


async def test_reasoning_folds_when_the_answer_starts_and_a_reset_discards_partials():
    app = TranscriptApp()
    async with app.run_test() as pilot:
        transcript = app.query_one(Transcript)
        await transcript.apply(ev.RequestStarted(1, "m", "p"))
        await transcript.apply(ev.ReasoningDelta("thinking hard"))
        block = transcript.query_one(ReasoningBlock)
        assert block.live and block.expanded
        await transcript.apply(ev.TextDelta("partial"))
        assert not block.live and not block.expanded
        await transcript.apply(ev.StreamReset("connection dropped"))
        await pilot.pause()
        assert not transcript.query(ReasoningBlock) and not transcript.query(AnswerBlock)
        await transcript.apply(ev.TextDelta("fresh"))
        await transcript.apply(ev.AssistantMessage("fresh answer"))
        await pilot.pause()
        assert [a.source for a in transcript.query(AnswerBlock)] == ["fresh answer"]


async def test_display_rows_render_as_markers_and_hidden_renders_nothing():
    assert marker_text("model_switch", {}) == "◈ model changed"
    assert marker_text("async_delegation_complete", {"count": 3}) == (
        "◈ 3 background agents finished"
    )
    assert marker_text("async_delegation_complete", None) == "◈ background agents finished"
    assert marker_text("hidden", {"x": 1}) is None
    app = TranscriptApp()
    async with app.run_test():
        transcript = app.query_one(Transcript)
        rows = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "display_kind": "hidden"},
            {"role": "assistant", "content": "", "display_kind": "model_switch"},
            {"role": "assistant", "content": "hello"},
        ]
        transcript.attach(StoredRows(rows), PlainRows())
        await transcript.open_history()
        assert [m.text for m in transcript.query(Marker)] == ["◈ model changed"]


async def test_tool_output_is_capped_for_display():
    shown = cap_output("x" * (OUTPUT_CAP_CHARS * 3))
    assert len(shown) < OUTPUT_CAP_CHARS + 100 and "more characters" in shown
    app = TranscriptApp()
    async with app.run_test() as pilot:
        transcript = app.query_one(Transcript)
        await transcript.apply(ev.ToolStarted("c1", "grep", {"pattern": "x"}, "grep x"))
        block = transcript.query_one(ToolBlock)
        assert block.state == "running"
        await transcript.apply(ev.ToolFinished("c1", "grep", True, "\n".join("m" * 500), 0.25))
        await pilot.click(ToolBlock)
        assert block.expanded and block.state == "ok" and block.duration == 0.25


def test_completion_reads_the_command_table():
    assert [c.name for c in commands.complete("/s")] == ["steer", "stop", "sessions"]
    assert commands.complete("/model x") == []
    assert commands.parse("/Title  My work ").argument == "My work"
    assert commands.parse("/nope").command is None


async def test_escape_stops_a_running_turn(make_app, scripted_in_process):
    server = scripted_in_process(
        {"replies": [reply("never finished", reasoning="hmm", gate="g", gate_after=2)]}
    )
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit("go")
        await wait_until(pilot, lambda: app.transcript.query(ReasoningBlock), what="reasoning")
        await type_keys(pilot, "escape")
        await app.wait_for_turn(10)
        await pilot.pause()
        assert app.status_panel.status.state == "stopped"
        assert not app.busy
        server.open_gate("g")

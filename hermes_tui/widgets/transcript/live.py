"""The running turn in the transcript: each agent event becomes or changes a widget."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from agent import events as ev
from hermes_tui.widgets.reasoning import ReasoningBlock
from hermes_tui.widgets.transcript.rows import answer_block

# Tool blocks and markers (and what they import) load with a turn's first of them, after the
# first frame (Z2).
if TYPE_CHECKING:
    from hermes_tui.widgets.answer import AnswerBlock, AnswerStream
    from hermes_tui.widgets.live_answer import LiveFeed
    from hermes_tui.widgets.tool_block import ToolBlock
    from hermes_tui.widgets.transcript.view import Transcript

Handler = Callable[[Any], Awaitable[None]]


def answer_stream(answer: LiveFeed) -> AnswerStream:
    """A started stream that paces the live answer's updates to what they cost to show."""
    from hermes_tui.widgets.answer import AnswerStream

    stream = AnswerStream(answer)  # type: ignore[arg-type]  # a feed appends like a Markdown
    stream.start()
    return stream


class LiveTurn:
    """Renders the running turn's events: reasoning, the streamed answer, tools, notices.

    With `show_reasoning` off (`ui.show_reasoning: false`) reasoning is not shown at all;
    the status panel still says the model is thinking (L3).
    """

    def __init__(self, transcript: Transcript, *, show_reasoning: bool = True) -> None:
        self.transcript = transcript
        self.show_reasoning = show_reasoning
        self._reasoning: ReasoningBlock | None = None
        self._answer: AnswerBlock | None = None
        self._stream: AnswerStream | None = None
        self._feed: LiveFeed | None = None
        self._answer_text: list[str] = []
        self._tools: dict[str, ToolBlock] = {}
        self._routes = dict(self.routes())

    def routes(self) -> Iterable[tuple[type, Handler]]:
        """The events the transcript shows, each with its handler (see EventRouter)."""
        if self.show_reasoning:
            yield ev.ReasoningDelta, self._reasoned
        yield ev.InputAttached, self._attached
        yield ev.RequestStarted, lambda _event: self.end_message()
        yield ev.TextDelta, self._wrote
        yield ev.ToolCallDelta, self._calling
        yield ev.StreamReset, lambda _event: self._discard_partial()
        yield ev.AssistantMessage, lambda event: self._finish_answer(event.content)
        yield ev.ToolStarted, self._tool_started
        yield ev.ToolAwaitingApproval, self._tool_awaiting
        yield ev.ToolApprovalAnswered, self._tool_answered
        yield ev.ToolFinished, self._tool_finished
        yield ev.SubagentProgress, self._subagent_progress
        yield ev.DisplayRow, self._display_row
        yield ev.Retrying, self._retrying
        yield ev.Notice, lambda event: self.transcript.add_notice(event.text, event.level)
        yield ev.SavingFailed, self._saving_failed
        yield ev.CompactionFinished, self._compaction_finished
        yield ev.TurnError, lambda event: self.transcript.add_error(event.message)
        yield ev.TurnFinished, self._turn_finished

    async def apply(self, event: ev.AgentEvent) -> None:
        """Render one agent event."""
        handler = self._routes.get(type(event))
        if handler is not None:
            await handler(event)

    def clear(self) -> None:
        """Forget the running turn's widgets (the transcript was emptied)."""
        self._tools.clear()

    async def _attached(self, event: ev.InputAttached) -> None:
        message = self.transcript.last_user
        if message is not None and message.is_attached:
            message.attach(event.attachments)

    # -- the message being written -----------------------------------------------------------
    async def _reasoned(self, event: ev.ReasoningDelta) -> None:
        if self._reasoning is None:
            self._reasoning = ReasoningBlock()
            await self.transcript.add(self._reasoning)
        self._reasoning.append(event.text)
        self.transcript.arrived()

    async def _calling(self, _event: ev.ToolCallDelta) -> None:
        self._fold_reasoning()

    def _fold_reasoning(self) -> None:
        if self._reasoning is not None:
            self._reasoning.finish()

    async def _wrote(self, event: ev.TextDelta) -> None:
        self._fold_reasoning()
        if self._answer is None:
            self._answer = answer_block()
            await self.transcript.add(self._answer)
            self._stream = answer_stream(self._live_feed(self._answer))
        self._answer_text.append(event.text)
        assert self._stream is not None
        await self._stream.write(event.text)
        self.transcript.arrived()

    async def _finish_answer(self, content: str) -> None:
        """Finalise the streamed answer with one update of the full text."""
        self._fold_reasoning()
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        if content and self._answer is None:
            self._answer = answer_block()
            await self.transcript.add(self._answer)
        if self._answer is not None:
            feed = self._feed or self._live_feed(self._answer)
            if content:
                await feed.finalize(content)
            else:
                await feed.widget.remove()
        self._reset_message()

    def _live_feed(self, answer: AnswerBlock) -> LiveFeed:
        """The stream's target: the answer, made lazy past a size (H10, live_answer.py)."""
        from hermes_tui.widgets.live_answer import LiveFeed

        self._feed = LiveFeed(answer, self.transcript.replace)
        return self._feed

    async def _discard_partial(self) -> None:
        """A retry replaces the failed attempt's partial answer and reasoning."""
        if self._stream is not None:
            await self._stream.stop()
        answer = self._feed.widget if self._feed is not None else self._answer
        for widget in (self._reasoning, answer):
            if widget is not None:
                await widget.remove()
        self._reset_message()

    async def end_message(self) -> None:
        """Close a message that got no AssistantMessage (stopped, error): keep its text."""
        if self._stream is not None or self._reasoning is not None:
            await self._finish_answer("".join(self._answer_text))
        self._reset_message()

    def _reset_message(self) -> None:
        self._reasoning = None
        self._answer = None
        self._stream = None
        self._feed = None
        self._answer_text = []

    # -- tools -------------------------------------------------------------------------------
    async def _tool_started(self, event: ev.ToolStarted) -> None:
        from hermes_tui.widgets.tool_block import ToolBlock

        block = ToolBlock(event.call_id, event.name, event.summary)
        self._tools[event.call_id] = block
        await self.transcript.add(block)

    async def _tool_awaiting(self, event: ev.ToolAwaitingApproval) -> None:
        block = self._tools.get(event.call_id)
        if block is not None:
            block.set_state("awaiting")

    async def _tool_answered(self, event: ev.ToolApprovalAnswered) -> None:
        block = self._tools.get(event.call_id)
        if block is not None and event.approved:
            block.set_state("running")

    async def _tool_finished(self, event: ev.ToolFinished) -> None:
        block = self._tools.get(event.call_id)
        if block is not None:
            block.finish(event.outcome, event.output, event.duration, event.display)

    async def _subagent_progress(self, event: ev.SubagentProgress) -> None:
        block = self._tools.get(event.call_id)
        if block is not None:
            block.show_subagent(event.tool, event.tool_calls, event.tokens)

    # -- rows and lines ----------------------------------------------------------------------
    async def _display_row(self, event: ev.DisplayRow) -> None:
        from hermes_tui.widgets.markers import Marker, marker_text

        text = marker_text(event.kind, event.metadata)
        if text is not None:
            await self.transcript.add(Marker(event.kind, text))
        if event.kind == "compaction":
            await self.transcript.window.renumber_after_compaction()

    async def _retrying(self, event: ev.Retrying) -> None:
        await self.transcript.add_notice(
            f"retrying ({event.progress}) in {event.delay:.0f}s: {event.reason}",
            "warning",
        )

    async def _saving_failed(self, event: ev.SavingFailed) -> None:
        await self.transcript.add_notice(event.message, "warning" if event.waiting else "error")

    async def _compaction_finished(self, event: ev.CompactionFinished) -> None:
        # Success shows as the ◈ marker (a DisplayRow); a failure says what happened.
        if not event.ok and event.message:
            await self.transcript.add_notice(event.message, "warning")

    async def _turn_finished(self, event: ev.TurnFinished) -> None:
        await self.end_message()
        if event.status == "stopped":
            await self.transcript.add_notice("■ stopped", "warning")
        await self.transcript.window.seal_turn()

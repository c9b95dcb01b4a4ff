"""The transcript: the one scroll container; live turns from events, resumed ones from rows."""

from __future__ import annotations

import json
from typing import Any

from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Markdown
from textual.widgets._markdown import MarkdownStream

from agent import events as ev
from hermes_tui.widgets.markers import Marker, marker_text
from hermes_tui.widgets.messages import AnswerBlock, ErrorBlock, NoticeLine, UserMessage
from hermes_tui.widgets.reasoning import ReasoningBlock
from hermes_tui.widgets.tool_block import ToolBlock


def summarize_call(name: str, arguments: Any) -> str:
    """The one-line summary of a stored tool call, as the agent shows a live one."""
    from agent.tools.registry import default_registry

    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            arguments = {}
    return default_registry().summary(name, arguments if isinstance(arguments, dict) else {})


class Transcript(VerticalScroll):
    """Follows the bottom while the agent streams, until the user scrolls up."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._reasoning: ReasoningBlock | None = None
        self._answer: AnswerBlock | None = None
        self._stream: MarkdownStream | None = None
        self._answer_text: list[str] = []
        self._tools: dict[str, ToolBlock] = {}

    def on_mount(self) -> None:
        self.anchor()

    async def add(self, *widgets: Widget) -> None:
        """Mount rows at the end."""
        await self.mount_all(widgets)

    async def add_user(self, text: str) -> None:
        """Show what the user sent and follow the bottom again."""
        await self.add(UserMessage(text))
        self.anchor()

    async def add_notice(self, text: str, level: str = "info") -> None:
        """A one-line notice."""
        await self.add(NoticeLine(text, level))

    async def add_error(self, message: str) -> None:
        """An error block."""
        await self.end_message()
        await self.add(ErrorBlock(message))

    async def clear(self) -> None:
        """Remove every row (a new or another session)."""
        await self.end_message()
        self._tools.clear()
        await self.remove_children()
        self.anchor()

    async def apply(self, event: ev.AgentEvent) -> None:
        """Render one agent event."""
        match event:
            case ev.RequestStarted():
                await self.end_message()
            case ev.ReasoningDelta(text=text):
                if self._reasoning is None:
                    self._reasoning = ReasoningBlock()
                    await self.add(self._reasoning)
                self._reasoning.append(text)
            case ev.TextDelta(text=text):
                await self._write_answer(text)
            case ev.ToolCallDelta():
                self._fold_reasoning()
            case ev.StreamReset():
                await self._discard_partial()
            case ev.AssistantMessage(content=content):
                await self._finish_answer(content)
            case ev.ToolStarted(call_id=call_id, name=name, summary=summary):
                block = ToolBlock(call_id, name, summary)
                self._tools[call_id] = block
                await self.add(block)
            case ev.ToolFinished(call_id=call_id, ok=ok, output=output, duration=duration):
                block = self._tools.get(call_id)
                if block is not None:
                    block.finish("ok" if ok else "error", output, duration)
            case ev.DisplayRow(kind=kind, metadata=metadata):
                text = marker_text(kind, metadata)
                if text is not None:
                    await self.add(Marker(kind, text))
            case ev.Retrying(attempt=attempt, max_attempts=most, delay=delay, reason=reason):
                await self.add_notice(
                    f"retrying ({attempt}/{most}) in {delay:.0f}s: {reason}", "warning"
                )
            case ev.Notice(text=text, level=level):
                await self.add_notice(text, level)
            case ev.TurnError(message=message):
                await self.add_error(message)
            case ev.TurnFinished(status=status):
                await self.end_message()
                if status == "stopped":
                    await self.add_notice("■ stopped", "warning")

    def _fold_reasoning(self) -> None:
        if self._reasoning is not None:
            self._reasoning.finish()

    async def _write_answer(self, text: str) -> None:
        self._fold_reasoning()
        if self._answer is None:
            self._answer = AnswerBlock()
            await self.add(self._answer)
            self._stream = Markdown.get_stream(self._answer)
        self._answer_text.append(text)
        assert self._stream is not None
        await self._stream.write(text)

    async def _finish_answer(self, content: str) -> None:
        """Finalise the streamed answer with one update of the full text."""
        self._fold_reasoning()
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        if content and self._answer is None:
            self._answer = AnswerBlock()
            await self.add(self._answer)
        if self._answer is not None:
            if content:
                await self._answer.update(content)
            else:
                await self._answer.remove()
        self._reset_message()

    async def _discard_partial(self) -> None:
        """A retry replaces the failed attempt's partial answer and reasoning."""
        if self._stream is not None:
            await self._stream.stop()
        for widget in (self._reasoning, self._answer):
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
        self._answer_text = []

    async def load_rows(self, rows: list[dict[str, Any]]) -> None:
        """Rebuild the transcript from persisted rows only (D3): there is no reasoning in them."""
        await self.clear()
        results = {
            row.get("tool_call_id"): row.get("content") or ""
            for row in rows
            if row.get("role") == "tool" and not row.get("display_kind")
        }
        widgets: list[Widget] = []
        for row in rows:
            kind = row.get("display_kind")
            if kind:
                text = marker_text(kind, row.get("display_metadata"))
                if text is not None:
                    widgets.append(Marker(kind, text))
            elif row.get("role") == "user":
                widgets.append(UserMessage(row.get("content") or ""))
            elif row.get("role") == "assistant":
                if row.get("content"):
                    widgets.append(AnswerBlock(row["content"]))
                for call in row.get("tool_calls") or []:
                    summary = summarize_call(call["name"], call.get("arguments"))
                    block = ToolBlock(call["id"], call["name"], summary, state="missing")
                    if call["id"] in results:
                        block.finish("done", results[call["id"]])
                    widgets.append(block)
        await self.add(*widgets)
        self.scroll_end(animate=False, immediate=True)

"""The transcript: the one scroll container; live turns from events, resumed ones from rows."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from textual.containers import VerticalScroll
from textual.widget import Widget

from agent import events as ev
from hermes_tui.widgets.markers import Marker, marker_text
from hermes_tui.widgets.messages import ErrorBlock, NoticeLine, UserMessage
from hermes_tui.widgets.notes import RecoveryNote, SummaryBlock
from hermes_tui.widgets.reasoning import ReasoningBlock
from hermes_tui.widgets.tool_block import ToolBlock

if TYPE_CHECKING:
    from hermes_tui.widgets.answer import AnswerBlock, AnswerStream

PAGE_ROWS = 50
"""Stored rows fetched per page when the user scrolls past the mounted ones."""
MAX_MOUNTED = 200
"""At most this many row widgets stay mounted (beyond it, rows at the far end are dropped)."""
EDGE_ROWS = 3
"""Scrolling within this many lines of the top (bottom) loads the next page."""


class HistorySource(Protocol):
    """Where the transcript pages stored rows from (the session database)."""

    async def page(
        self, *, before_seq: int | None = None, after_seq: int | None = None, limit: int
    ) -> list[dict[str, Any]]:
        """Up to `limit` rows next to a seq, oldest first (the newest rows with neither)."""
        ...

    async def last_user_seq(self) -> int | None:
        """The seq of the newest stored user row, once pending writes landed."""
        ...


class SessionHistory:
    """A HistorySource over the session database, for whichever session is current."""

    def __init__(self, db: Any, session_id: Callable[[], str | None]) -> None:
        self.db = db
        self.session_id = session_id

    async def page(
        self, *, before_seq: int | None = None, after_seq: int | None = None, limit: int
    ) -> list[dict[str, Any]]:
        """Rows of the current session next to a seq (see SessionDB.load_messages_page)."""
        session_id = self.session_id()
        if session_id is None:
            return []
        return await self.db.load_messages_page(
            session_id, before_seq=before_seq, after_seq=after_seq, limit=limit
        )

    async def last_user_seq(self) -> int | None:
        """The seq of the current session's newest stored user row."""
        session_id = self.session_id()
        if session_id is None:
            return None
        await self.db.flush()
        return await self.db.last_message_seq(session_id, role="user")


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
        self._stream: AnswerStream | None = None
        self._answer_text: list[str] = []
        self._tools: dict[str, ToolBlock] = {}
        self.history: HistorySource | None = None
        # Window state: stored rows exist above / below the mounted ones.
        self._older = False
        self._newer = False
        self._paging = False
        self._results: dict[str | None, dict[str, Any]] = {}
        # Widgets of the running turn, not yet tagged with a stored row: never trimmed.
        self._live: list[Widget] = []
        self._selected: Widget | None = None
        # Bumped by clear(): a page fetched for an earlier window is dropped.
        self._generation = 0

    def on_mount(self) -> None:
        self.anchor()

    async def add(self, *widgets: Widget) -> None:
        """Mount live rows at the end (below the newest stored row)."""
        while self._newer:
            await self._back_to_newest()
        if self.history is not None:
            self._live.extend(widgets)
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
        self._results.clear()
        self._live.clear()
        self._older = self._newer = False
        self._generation += 1
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
            case ev.ToolAwaitingApproval(call_id=call_id):
                block = self._tools.get(call_id)
                if block is not None:
                    block.set_state("awaiting")
            case ev.ToolApprovalAnswered(call_id=call_id, approved=True):
                block = self._tools.get(call_id)
                if block is not None:
                    block.set_state("running")
            case ev.ToolFinished(call_id=call_id, ok=ok, output=output, duration=duration):
                block = self._tools.get(call_id)
                if block is not None:
                    state = "declined" if event.declined else ("ok" if ok else "error")
                    block.finish(state, output, duration)
            case ev.DisplayRow(kind=kind, metadata=metadata):
                text = marker_text(kind, metadata)
                if text is not None:
                    await self.add(Marker(kind, text))
                if kind == "compaction":
                    await self._renumber_after_compaction()
            case ev.Retrying(attempt=attempt, max_attempts=most, delay=delay, reason=reason):
                await self.add_notice(
                    f"retrying ({attempt}/{most}) in {delay:.0f}s: {reason}", "warning"
                )
            case ev.Notice(text=text, level=level):
                await self.add_notice(text, level)
            case ev.CompactionFinished(ok=False, message=message) if message:
                # Success shows as the ◈ marker (a DisplayRow); a failure says what happened.
                await self.add_notice(message, "warning")
            case ev.TurnError(message=message):
                await self.add_error(message)
            case ev.TurnFinished(status=status):
                await self.end_message()
                if status == "stopped":
                    await self.add_notice("■ stopped", "warning")
                await self.seal_turn()

    # -- message navigation --------------------------------------------------------------------
    @property
    def selected(self) -> Widget | None:
        """The message picked with the jump keys, if it is still mounted."""
        widget = self._selected
        return widget if widget is not None and widget.is_attached else None

    def jump(self, step: int) -> Widget | None:
        """Select the previous (-1) or next (+1) message and scroll it to the top."""
        messages = [w for w in self.children if isinstance(w, jump_targets())]
        if not messages:
            return None
        current = self.selected
        # Nothing picked yet: start from the newest message.
        index = messages.index(current) + step if current in messages else len(messages) - 1
        if index < 0:
            self._request_page("older")
        index = max(0, min(index, len(messages) - 1))
        if current is not None:
            current.remove_class("-selected")
        target = messages[index]
        target.add_class("-selected")
        self._selected = target
        self.scroll_to_widget(target, top=True, animate=False, immediate=True)
        return target

    def _fold_reasoning(self) -> None:
        if self._reasoning is not None:
            self._reasoning.finish()

    async def _write_answer(self, text: str) -> None:
        self._fold_reasoning()
        if self._answer is None:
            self._answer = answer_block()
            await self.add(self._answer)
            self._stream = answer_stream(self._answer)
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
            self._answer = answer_block()
            await self.add(self._answer)
        if self._answer is not None:
            if content:
                await self._answer.finalize(content)
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
        """Show persisted rows only (D3), all of them: there is no reasoning in them."""
        await self.clear()
        await self.mount_all(self._row_widgets(rows))
        self.scroll_end(animate=False, immediate=True)

    # -- the window over a long session (U5) ------------------------------------------------
    async def open_history(self, history: HistorySource) -> None:
        """Show the newest page of a stored session; older pages load as the user scrolls up."""
        await self.clear()
        self.history = history
        rows = await history.page(limit=PAGE_ROWS)
        self._older = len(rows) == PAGE_ROWS
        await self.mount_all(self._row_widgets(rows))
        self.scroll_end(animate=False, immediate=True)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value < old_value and new_value <= EDGE_ROWS:
            self._request_page("older")
        elif new_value > old_value and new_value >= self.max_scroll_y - EDGE_ROWS:
            self._request_page("newer")

    def _on_mouse_scroll_up(self, event: Any) -> None:
        # At the very top scroll_y cannot change, so the wheel itself asks for more.
        if self.scroll_y <= EDGE_ROWS:
            self._request_page("older")

    def page_up(self) -> None:
        """Scroll up one page, loading older rows at the top."""
        if self.scroll_y <= EDGE_ROWS:
            self._request_page("older")
        self.scroll_page_up(animate=False)

    def page_down(self) -> None:
        """Scroll down one page, loading newer rows at the bottom."""
        if self.scroll_y >= self.max_scroll_y - EDGE_ROWS:
            self._request_page("newer")
        self.scroll_page_down(animate=False)

    def _request_page(self, direction: str) -> None:
        wanted = self._older if direction == "older" else self._newer
        if wanted and self.history is not None and not self._paging:
            self._paging = True
            self.call_later(self._load_page, direction)

    async def _load_page(self, direction: str) -> None:
        """Mount one page of older (or newer) rows and drop rows at the far end."""
        generation = self._generation
        try:
            seqs = [seq for seq in map(_row_seq, self.children) if seq is not None]
            if self.history is None or not seqs:
                return
            if direction == "older":
                rows = await self.history.page(before_seq=min(seqs), limit=PAGE_ROWS)
                if generation != self._generation:
                    return
                self._older = len(rows) == PAGE_ROWS
                widgets = self._row_widgets(rows)
                if widgets:
                    await self._keep_in_place(lambda: self.mount_all(widgets, before=0))
                    await self._trim_async("bottom")
            else:
                rows = await self.history.page(after_seq=max(seqs), limit=PAGE_ROWS)
                if generation != self._generation:
                    return
                self._newer = len(rows) == PAGE_ROWS
                widgets = self._row_widgets(rows)
                if widgets:
                    await self.mount_all(widgets)
                    await self._keep_in_place(lambda: self._trim_async("top"))
        finally:
            # After the scroll position is restored (queued before this), take requests again.
            self.call_after_refresh(self._end_paging)

    def _end_paging(self) -> None:
        self._paging = False

    @property
    def paging(self) -> bool:
        """True while a page of stored rows is being fetched and mounted."""
        return self._paging

    async def _keep_in_place(self, change: Callable[[], Awaitable[Any]]) -> None:
        """Apply `change` (mounting above, removing above) without moving what the user sees."""
        children = list(self.children)
        anchor = next((w for w in children if w.virtual_region.bottom > self.scroll_y), None)
        offset = anchor.virtual_region.y - self.scroll_y if anchor is not None else 0
        await change()
        if anchor is None or not anchor.is_attached:
            return

        def restore() -> None:
            self.scroll_to(y=anchor.virtual_region.y - offset, animate=False, immediate=True)

        self.call_after_refresh(restore)

    async def _trim_async(self, end: str) -> None:
        removed = self._trim(end)
        if removed is not None:
            await removed

    def _trim(self, end: str) -> Any:
        """Keep at most MAX_MOUNTED rows: drop whole stored rows from `end` of the window."""
        children = list(self.children)
        excess = len(children) - MAX_MOUNTED
        if excess <= 0:
            return None
        ordered = children if end == "top" else children[::-1]
        cut = excess
        # A stored row's widgets go together, so no row is half shown.
        while cut < len(ordered) and _row_seq(ordered[cut]) == _row_seq(ordered[cut - 1]):
            cut += 1
        doomed = ordered[:cut]
        # The bottom is live while a turn has unsealed widgets: it is never trimmed then.
        live = [w for w in doomed if w in self._live] or (end == "bottom" and self._live)
        keeps_a_seq = any(_row_seq(w) is not None for w in ordered[cut:])
        if live or not keeps_a_seq:
            return None
        if end == "top":
            self._older = True
        else:
            self._newer = True
            # Following "the bottom" makes no sense while the newest rows are not mounted.
            self.anchor(False)
        return self.remove_children(doomed)

    async def seal_turn(self) -> None:
        """Tag the finished turn's widgets with its stored user row, so they can be paged."""
        if self.history is None or not self._live:
            return
        seq = await self.history.last_user_seq()
        if seq is None:
            return
        for widget in self._live:
            if widget.is_attached:
                widget.row_seq = seq  # type: ignore[attr-defined]
        self._live.clear()
        if self.scroll_y >= self.max_scroll_y - EDGE_ROWS:
            await self._keep_in_place(lambda: self._trim_async("top"))

    async def _renumber_after_compaction(self) -> None:
        """Compaction stored its marker (and summary) before the kept tail, moving the tail's
        seqs up: the mounted tail rows take their new seqs, so paging stays exact (U5)."""
        if self.history is None:
            return
        from agent.compaction import SUMMARY_KEY

        rows = await self.history.page(limit=PAGE_ROWS)
        marker = next((r for r in reversed(rows) if r.get("display_kind") == "compaction"), None)
        if marker is None:
            return
        start = marker["seq"]
        inserted = 1 + sum(
            1
            for r in rows
            if r["seq"] == start + 1
            and (r.get("display_metadata") or {}).get(SUMMARY_KEY) == "standalone"
        )
        for widget in self.children:
            seq = _row_seq(widget)
            if seq is not None and seq >= start and widget not in self._live:
                widget.row_seq = seq + inserted  # type: ignore[attr-defined]

    async def _back_to_newest(self) -> None:
        """Live output goes below the newest stored row: reload the tail first if trimmed."""
        if self._newer and self.history is not None:
            await self.open_history(self.history)
            self._newer = False

    def _row_widgets(self, rows: list[dict[str, Any]]) -> list[Widget]:
        """Widgets for stored rows, each tagged with its row's seq."""
        for row in rows:
            if row.get("role") == "tool" and not row.get("display_kind"):
                self._results[row.get("tool_call_id")] = row
                missing = self._tools.get(row.get("tool_call_id") or "")
                if missing is not None and missing.state == "missing":
                    _finish_from_row(missing, row)
        widgets: list[Widget] = []
        for row in rows:
            made: list[Widget] = []
            kind = row.get("display_kind")
            if kind:
                text = marker_text(kind, row.get("display_metadata"))
                if text is not None:
                    made.append(Marker(kind, text))
            elif row.get("role") == "user":
                note, text = _split_typed(row)
                made += note
                if text:
                    made.append(UserMessage(text))
            elif row.get("role") == "assistant":
                note, text = _split_typed(row)
                made += note
                if text:
                    made.append(answer_block(text))
                for call in row.get("tool_calls") or []:
                    summary = summarize_call(call["name"], call.get("arguments"))
                    block = ToolBlock(call["id"], call["name"], summary, state="missing")
                    if call["id"] in self._results:
                        _finish_from_row(block, self._results[call["id"]])
                    else:
                        self._tools[call["id"]] = block
                    made.append(block)
            for widget in made:
                widget.row_seq = row.get("seq")  # type: ignore[attr-defined]
            widgets.extend(made)
        return widgets


def _finish_from_row(block: ToolBlock, row: dict[str, Any]) -> None:
    """A stored tool result: ok, error or declined and its duration when recorded, else done."""
    outcome = row.get("display_metadata") or {}
    ok = outcome.get("ok") if isinstance(outcome, dict) else None
    state = "done" if ok is None else ("ok" if ok else "error")
    if ok is not None and outcome.get("outcome") == "declined":
        state = "declined"
    duration = outcome.get("duration") if ok is not None else None
    if not isinstance(duration, int | float):
        duration = None
    block.finish(state, row.get("content") or "", duration)


def answer_block(text: str = "") -> AnswerBlock:
    """A new answer widget; Markdown is imported on the first answer, not at start-up."""
    from hermes_tui.widgets.answer import AnswerBlock

    return AnswerBlock(text)


def answer_stream(answer: AnswerBlock) -> AnswerStream:
    """A started stream that paces the live answer's updates to what they cost to show."""
    from hermes_tui.widgets.answer import AnswerStream

    stream = AnswerStream(answer)
    stream.start()
    return stream


def jump_targets() -> tuple[type[Widget], ...]:
    """The rows the jump keys stop at."""
    from hermes_tui.widgets.answer import AnswerBlock

    return (UserMessage, AnswerBlock, ErrorBlock)


def _row_seq(widget: Widget) -> int | None:
    return getattr(widget, "row_seq", None)


def _split_typed(row: dict[str, Any]) -> tuple[list[Widget], str]:
    """A stored text row's typed part (a compaction summary, a recovery note) and the rest.

    The model reads these rows as plain text; the user did not type them, so they render as
    notes. A summary merged into the first kept message is its first `summary_chars`.
    """
    content = row.get("content") or ""
    meta = row.get("display_metadata")
    if not isinstance(meta, dict):
        return [], content
    # Here, not at import: the agent's modules load after the first frame (bench startup).
    from agent.compaction import SUMMARY_KEY
    from agent.recovery import NOTE_KIND_KEY, RECOVERY_NOTE_KIND

    summary = meta.get(SUMMARY_KEY)
    if summary == "standalone":
        return [SummaryBlock(content)], ""
    chars = meta.get("summary_chars")
    if summary == "merged" and isinstance(chars, int) and 0 < chars <= len(content):
        return [SummaryBlock(content[:chars])], content[chars:].lstrip("\n")
    if row.get("role") == "user" and meta.get(NOTE_KIND_KEY) == RECOVERY_NOTE_KIND:
        return [RecoveryNote()], ""
    return [], content

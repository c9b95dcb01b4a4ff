"""The window over a long session (U5, Z2): rows mounted up to a bounded count and a bounded
height, pages of stored rows loaded as the user scrolls and dropped at the far end."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from textual.widget import Widget

from hermes_tui.widgets.transcript.fill import ViewFill
from hermes_tui.widgets.transcript.rows import (
    PlainRows,
    RowReader,
    RowWidgets,
    mark_row,
    row_seq,
)

if TYPE_CHECKING:
    from textual.geometry import Region

    from hermes_tui.widgets.transcript.view import Transcript

PAGE_ROWS = 50
"""Stored rows fetched per page when the user scrolls past the mounted ones."""
MAX_MOUNTED = 200
"""At most this many row widgets stay mounted (beyond it, rows at the far end are dropped)."""
EDGE_ROWS = 3
"""Scrolling within this many lines of the top (bottom) loads the next page."""
PAGE_LINES = 400
"""A page stops at whole rows of about this many lines (estimated before mounting)."""
MAX_LINES = 1600
"""At most about this many lines of rows stay mounted (beyond it, the far end is dropped)."""
ROW_LINES = 3
"""The estimated height of a row that is not a long answer."""


class HistorySource(Protocol):
    """Where the transcript pages stored rows from (the session database)."""

    async def page(
        self, *, before_seq: int | None = None, after_seq: int | None = None, limit: int
    ) -> Sequence[Mapping[str, Any]]:
        """Up to `limit` rows next to a seq, oldest first (the newest rows with neither)."""
        ...

    async def last_user_seq(self) -> int | None:
        """The seq of the newest stored user row, once pending writes landed."""
        ...


class HistoryWindow:
    """Which stored rows are mounted, and the paging that moves the window."""

    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript
        self.history: HistorySource | None = None
        self.rows = RowWidgets(PlainRows())
        # Stored rows exist above / below the mounted ones.
        self._older = False
        self._newer = False
        self._paging = False
        # Widgets of the running turn, not yet tagged with a stored row: never trimmed.
        self._live: list[Widget] = []
        # Bumped by clear(): a page fetched for an earlier window is dropped.
        self._generation = 0
        self.fill = ViewFill(transcript, self._keep_in_place)

    def attach(self, history: HistorySource, reader: RowReader) -> None:
        """Page from `history`, reading its rows with `reader` (once, when the store opens)."""
        self.history = history
        self.rows = RowWidgets(reader)

    @property
    def paging(self) -> bool:
        """True while a page of stored rows is being fetched and mounted."""
        return self._paging

    def clear(self) -> None:
        """Forget the window (the transcript was emptied)."""
        self.rows.clear()
        self._live.clear()
        self._older = self._newer = False
        self._generation += 1
        self.fill.reset()

    async def before_live(self, widgets: Sequence[Widget]) -> None:
        """Live rows go below the newest stored row: reload the tail first if it was trimmed."""
        while self._newer and self.history is not None:
            await self.open()
            self._newer = False
        if self.history is not None:
            self._live.extend(widgets)

    def replace_live(self, old: Widget, new: Widget) -> None:
        """A live row was replaced by another (it is sealed with the turn in its place)."""
        self._live = [new if widget is old else widget for widget in self._live]

    async def open(self) -> None:
        """Show the newest page of the stored session; older pages load on scrolling up."""
        transcript = self.transcript
        if self.history is None:
            await transcript.clear()
            return
        rows = await self.history.page(limit=PAGE_ROWS)
        # One frame for the whole change: the old rows stay on screen until the new ones are
        # mounted (each frame in between laid out and painted a half-built window, Z2).
        with transcript.app.batch_update():
            await transcript.clear()
            # The bottom screen is shown as plain text in the first frame, and built after it.
            tail = transcript.size.height or 40
            widgets, cut = await self._fit(self.rows.widgets(rows), keep="newest", tail_rows=tail)
            self._older = cut or len(rows) == PAGE_ROWS
            await transcript.mount_all(widgets)
            transcript.scroll_end(animate=False, immediate=True)
        # The first frame shows the bottom's plain text; its Markdown is built in the next.
        self.fill.request_after_refresh()

    def scrolled(self, old_value: float, new_value: float) -> None:
        """Near an edge, ask for the page beyond it."""
        if new_value < old_value and new_value <= EDGE_ROWS:
            self.request_page("older")
        elif new_value > old_value and new_value >= self.transcript.max_scroll_y - EDGE_ROWS:
            self.request_page("newer")

    def at_top(self) -> bool:
        """True when the view is within EDGE_ROWS of the top."""
        return self.transcript.scroll_y <= EDGE_ROWS

    def at_bottom(self) -> bool:
        """True when the view is within EDGE_ROWS of the bottom."""
        return self.transcript.scroll_y >= self.transcript.max_scroll_y - EDGE_ROWS

    def request_page(self, direction: str) -> None:
        """Load one page of `direction` (older | newer) soon, if there is one."""
        wanted = self._older if direction == "older" else self._newer
        if wanted and self.history is not None and not self._paging:
            self._paging = True
            self.transcript.call_later(self._load_page, direction)

    async def _load_page(self, direction: str) -> None:
        """Mount one page of older (or newer) rows and drop rows at the far end."""
        from storage.errors import StorageError

        try:
            await self._page(direction)
        except StorageError as exc:
            # A damaged database (H7): the rows on screen stay, and the reason is shown.
            await self.transcript.add_notice(
                f"More of this session cannot be shown: {exc}.", "error"
            )
        finally:
            # After the scroll position is restored (queued before this), take requests again.
            self.transcript.call_after_refresh(self._end_paging)

    async def _page(self, direction: str) -> None:
        transcript = self.transcript
        generation = self._generation
        seqs = [seq for seq in map(row_seq, transcript.children) if seq is not None]
        if self.history is None or not seqs:
            return
        older = direction == "older"
        if older:
            rows = await self.history.page(before_seq=min(seqs), limit=PAGE_ROWS)
        else:
            rows = await self.history.page(after_seq=max(seqs), limit=PAGE_ROWS)
        if generation != self._generation:
            return
        widgets, cut = await self._fit(
            self.rows.widgets(rows), keep="newest" if older else "oldest", tail_rows=0
        )
        if generation != self._generation:
            return
        more = cut or len(rows) == PAGE_ROWS
        if older:
            self._older = more
            if widgets:
                await self._keep_in_place(lambda: transcript.mount_all(widgets, before=0))
                await self._trim_async("bottom")
        else:
            self._newer = more
            if widgets:
                await transcript.mount_all(widgets)
                await self._keep_in_place(lambda: self._trim_async("top"))

    def _end_paging(self) -> None:
        self._paging = False
        self.fill.request()

    async def _fit(
        self, widgets: list[Widget], *, keep: str, tail_rows: int
    ) -> tuple[list[Widget], bool]:
        """The whole rows of `widgets` at the `keep` end (newest | oldest) that reach about
        PAGE_LINES lines, and whether any were cut. Long answers are cut into chunks and
        estimated off the UI thread; the newest `tail_rows` lines are parsed there too."""
        width = max(20, self.transcript.scrollable_content_region.width or 80)
        groups: list[list[Widget]] = []
        for widget in widgets:
            if groups and row_seq(groups[-1][-1]) == row_seq(widget):
                groups[-1].append(widget)
            else:
                groups.append([widget])
        if keep == "newest":
            groups.reverse()

        def measure() -> int:
            total = kept = 0
            for group in groups:
                for widget in group if keep == "oldest" else reversed(group):
                    total += _estimate(widget, width, max(0, tail_rows - total))
                kept += 1
                if total >= PAGE_LINES:
                    break
            return kept

        kept = await asyncio.to_thread(measure)
        chosen = groups[:kept]
        if keep == "newest":
            chosen.reverse()
        return [widget for group in chosen for widget in group], kept < len(groups)

    async def _keep_in_place(self, change: Callable[[], Awaitable[Any]]) -> None:
        """Apply `change` (mounting above, removing above) without moving what the user sees."""
        transcript = self.transcript
        if transcript.following:
            # At the bottom, the anchor keeps it there: a scroll_to would release it.
            await change()
            return
        children = list(transcript.children)
        anchor = next((w for w in children if w.virtual_region.bottom > transcript.scroll_y), None)
        # A long answer is many screens tall: what the user sees is held by a block inside
        # it, or a chunk built above the view (a row or more off its estimate) moved all of
        # what was on screen.
        seen = Seen(anchor, transcript.content_region) if anchor is not None else None
        offset = seen.row() - transcript.scroll_y if seen is not None else 0
        # A view at the session's live end stays there: scroll_to would release the anchor
        # (whatever its release_anchor says), and a streaming turn's end would go unseen.
        at_end = not self._newer and transcript.scroll_y >= transcript.max_scroll_y
        await change()
        if seen is None or not seen.anchor.is_attached:
            return
        # Built Markdown takes its height a frame or two after it is mounted: the view is
        # held at each of the next SETTLE_FRAMES refreshes (the fill waits for them, so the
        # next change starts from a settled view).
        last: int | None = None
        for _ in range(SETTLE_FRAMES):
            if not await _refreshed(transcript) or not seen.anchor.is_attached:
                return
            if at_end:
                transcript.scroll_end(animate=False, immediate=True)
                continue
            now = seen.row()
            if last is None:
                transcript.scroll_to(y=now - offset, animate=False, immediate=True)
            elif now != last:  # moved since the last hold: by as much (the user may scroll)
                transcript.scroll_to(
                    y=transcript.scroll_y + now - last, animate=False, immediate=True
                )
            last = now

    async def _trim_async(self, end: str) -> None:
        removed = self._trim(end)
        if removed is not None:
            await removed

    def _trim(self, end: str) -> Any:
        """Keep at most MAX_MOUNTED rows: drop whole stored rows from `end` of the window."""
        children = list(self.transcript.children)
        ordered = children if end == "top" else children[::-1]
        excess = max(len(children) - MAX_MOUNTED, _over_height(ordered))
        if excess <= 0:
            return None
        cut = excess
        # A stored row's widgets go together, so no row is half shown.
        while cut < len(ordered) and row_seq(ordered[cut]) == row_seq(ordered[cut - 1]):
            cut += 1
        doomed = ordered[:cut]
        # The bottom is live while a turn has unsealed widgets: it is never trimmed then.
        live = [w for w in doomed if w in self._live] or (end == "bottom" and self._live)
        keeps_a_seq = any(row_seq(w) is not None for w in ordered[cut:])
        if live or not keeps_a_seq:
            return None
        if end == "top":
            self._older = True
        else:
            self._newer = True
            # Following "the bottom" makes no sense while the newest rows are not mounted.
            self.transcript.anchor(False)
        return self.transcript.remove_children(doomed)

    async def seal_turn(self) -> None:
        """Tag the finished turn's widgets with its stored user row, so they can be paged."""
        if self.history is None or not self._live:
            return
        seq = await self.history.last_user_seq()
        if seq is None:
            return
        for widget in self._live:
            if widget.is_attached:
                mark_row(widget, seq)
        self._live.clear()
        if self.at_bottom():
            await self._keep_in_place(lambda: self._trim_async("top"))

    async def renumber_after_compaction(self) -> None:
        """Compaction stored its marker (and summary) before the kept tail, moving the tail's
        seqs up: the mounted tail rows take their new seqs, so paging stays exact (U5)."""
        if self.history is None:
            return
        rows = await self.history.page(limit=PAGE_ROWS)
        marker = next((r for r in reversed(rows) if r.get("display_kind") == "compaction"), None)
        if marker is None:
            return
        start = marker["seq"]
        reader = self.rows.reader
        summaries = [r for r in rows if r["seq"] == start + 1 and _own_row_note(reader, r)]
        inserted = 1 + len(summaries)
        for widget in self.transcript.children:
            seq = row_seq(widget)
            if seq is not None and seq >= start and widget not in self._live:
                mark_row(widget, seq + inserted)


def _estimate(widget: Widget, width: int, tail_rows: int) -> int:
    """A row widget's height in lines before it is mounted (thread-safe: no widget state)."""
    prepare = getattr(widget, "prepare", None)
    return prepare(width, tail_rows) if prepare is not None else ROW_LINES


def _over_height(ordered: list[Widget]) -> int:
    """How many widgets from the start of `ordered` to drop to keep MAX_LINES lines."""
    excess = sum(widget.outer_size.height for widget in ordered) - MAX_LINES
    dropped = 0
    while excess > 0 and dropped < len(ordered):
        excess -= ordered[dropped].outer_size.height
        dropped += 1
    return dropped


def _own_row_note(reader: RowReader, row: Mapping[str, Any]) -> bool:
    note = reader.note(row)
    return note is not None and note.own_row


SETTLE_FRAMES = 3
"""Refreshes after a change above the view at which the view is held in place again."""


class Seen:
    """What the view's top shows: a row of the transcript, and a block inside it if any."""

    def __init__(self, anchor: Widget, view: Region) -> None:
        self.anchor = anchor
        self.inner = _seen_inside(anchor, view)
        self._inner_at = self._inner_offset() or 0

    def row(self) -> int:
        """The transcript row (virtual) of what was seen, as the layout now places it."""
        inner = self._inner_offset()
        moved = inner - self._inner_at if inner is not None else 0
        return self.anchor.virtual_region.y + moved

    def _inner_offset(self) -> int | None:
        inner = self.inner
        if inner is None or inner.parent is not self.anchor or not inner.region.height:
            return None
        return inner.region.y - self.anchor.region.y


def _seen_inside(anchor: Widget, view: Region) -> Widget | None:
    """The first child of `anchor` that starts in `view` (what stands on screen), else the
    one across the view's top; None for a widget with no children in view."""
    across = None
    for child in anchor.children:
        region = child.region
        if not region.height or region.bottom <= view.y:
            continue
        if region.y >= view.y:
            return child if region.y < view.bottom else across
        across = across or child
    return across


async def _refreshed(transcript: Widget) -> bool:
    """Wait for the screen's next refresh (False if none came within a while: leave it)."""
    try:
        return await asyncio.wait_for(transcript.screen.wait_for_refresh(), REFRESH_WAIT)
    except TimeoutError:
        return False


REFRESH_WAIT = 5.0
"""Seconds a held view waits for a refresh at most (an app closing refreshes no more)."""

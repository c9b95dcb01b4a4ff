"""Building what nears the view (Z2): long answers' pending chunks, after each refresh.

The transcript asks for a fill when it opens, pages, scrolls or is resized; the fill starts
after the next refresh (when the layout says where everything is), builds the chunks within
a screen of the view and asks again, since a built chunk's height differs from its estimate.
Nothing runs between those moments, so an idle app does no work here.

An opened session builds only what its first screen shows: its fills reach the view alone
until nothing in it is left to build, and the screens above and below it are built
MARGIN_DELAY later (or at once if the user scrolls first), so a resume costs one screen's
Markdown, not three.

The build runs on the transcript's own message queue, never inside the after-refresh
callback: the screen awaits those callbacks on its loop and paints nothing until they
return, so a build there (a parse on a thread, then the mounting) held back the next frame,
a sent message's bubble and a typed key's echo with it.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from textual.geometry import Region
from textual.widget import Widget

from hermes_tui.probes import probe

if TYPE_CHECKING:
    from textual.timer import Timer

    from hermes_tui.widgets.lazy_answer import LazyAnswer, Wanted
    from hermes_tui.widgets.transcript.view import Transcript

MARGIN_DELAY = 0.5
"""Seconds after an opened session's view is built before the screen above and below it are
built too (what a scroll soon reveals); a scroll before then builds them at once."""

RELEASE_SLACK = 0.5
"""How far past the fill's reach (in screens) a built chunk is before it goes back to blank
rows. A blank run takes the rows its chunk took built, margins included, so it can be a row
taller than the blocks were: released right at the reach's edge, it touched the reach again,
was built again, and the fill never came to rest."""

KeepInPlace = Callable[[Callable[[], Awaitable[Any]]], Awaitable[None]]


class ViewFill:
    """Builds the pending chunks near the transcript's view, keeping what is seen in place."""

    def __init__(self, transcript: Transcript, keep_in_place: KeepInPlace) -> None:
        self.transcript = transcript
        self._keep_in_place = keep_in_place
        self._queued = False
        self._running = False
        self._expected = False
        self._held = 0
        self._asked_while_held = False
        # An opened session's fills build the view alone, until it holds nothing to build.
        self._view_only = False
        self._margin_timer: Timer | None = None

    @property
    def busy(self) -> bool:
        """True while a fill is expected, held, waits for its refresh or builds chunks."""
        return self._expected or self._asked_while_held or self._queued or self._running

    @contextmanager
    def held(self) -> Iterator[None]:
        """Build nothing until the block ends; a request made meanwhile is answered after it.

        A resume holds the fill while it finishes its own work (the status, the mode, the
        sessions list): its first frame shows the bottom screen's plain text, and the
        Markdown build that follows no longer lands in the middle of the resume (Z2)."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            if not self._held and self._asked_while_held:
                self._asked_while_held = False
                self.request()

    def reset(self) -> None:
        """The transcript was emptied: an opened session's view-only fills and its margin's
        timer are over (a stream in the next session releases what it leaves behind)."""
        self._view_only = False
        self._cancel_margin()

    def request_after_refresh(self) -> None:
        """Ask for a fill once the next refresh is drawn (the first frame of an opened
        session shows plain text; its Markdown is built in the next). Busy from now: a
        caller waiting for the view to be built must not see it idle in between."""
        if self.transcript.is_attached:
            self._expected = True
            self._view_only = True
            self._cancel_margin()
            self.transcript.call_after_refresh(self._expected_request)

    def _expected_request(self) -> None:
        # This runs after the refresh it waited for: the layout is known, so the fill starts
        # now (request() would wait for yet another refresh, one idle frame's time).
        self._expected = False
        if self._held:
            self._asked_while_held = True
        elif not self._queued and self.transcript.is_attached:
            self._queued = True
            self._start()

    def request(self) -> None:
        """Fill after the next refresh (once, however often it is asked before then)."""
        if self._margin_timer is not None and not self._view_only:
            self._cancel_margin()  # this fill reaches the margin: no need to wait for it
        if self._held:
            self._asked_while_held = True
            return
        if not self._queued and self.transcript.is_attached:
            self._queued = True
            self.transcript.call_after_refresh(self._start)

    def _start(self) -> None:
        if not self.transcript.call_later(self._fill):
            self._queued = False  # the transcript is gone

    async def _fill(self) -> None:
        # Fills run one at a time, on the transcript's queue: a request made while this one
        # runs queues the next fill behind it (`_queued` is clear again by now), never lost.
        self._queued = False
        self._running = True
        view_only = self._view_only
        try:
            # The parse first, while the screen goes on painting (a request meanwhile is
            # answered by the one below); then the mounting, in one step that keeps what the
            # user sees in place.
            reach = self._reach(margin=not view_only)
            parsed = await _parse(self.near_view(reach))
            # Releasing waits for the full reach: the view alone would release the margin.
            far = {} if view_only else self.far_from_view(self._reach(slack=RELEASE_SLACK))
            if parsed or far:
                await self._keep_in_place(lambda: _build(parsed, far))
        finally:
            self._running = False
        # Heights changed: more may have come near.
        if parsed or far:
            self.request()
        elif view_only and self._view_only:
            # The view is built: the margin follows a little later, unless a scroll asks first.
            self._view_only = False
            self._margin_timer = self.transcript.set_timer(self._margin_delay(), self._margin)

    def _margin_delay(self) -> float:
        # A timer needs more than 0 s.
        return max(0.01, float(probe(self.transcript.app, "margin_delay", MARGIN_DELAY)))

    def _margin(self) -> None:
        self._margin_timer = None
        self.request()

    def _cancel_margin(self) -> None:
        if self._margin_timer is not None:
            self._margin_timer.stop()
            self._margin_timer = None

    def near_view(self, reach: Region | None) -> dict[LazyAnswer, list[Wanted]]:
        """Each long answer's chunks not built yet within `reach` (the view and a screen
        around it, or the view alone)."""
        near: dict[LazyAnswer, list[Wanted]] = {}
        for row in self._lazy_rows():
            if reach is None or not _overlaps(row, reach):
                continue
            wanted = row.wanted(reach.y, reach.bottom)
            if wanted:
                near[row] = wanted
        return near

    def far_from_view(self, reach: Region | None) -> dict[LazyAnswer, list[list[Widget]]]:
        """Each long answer's built chunks beyond `reach` (H10, Z2: a followed stream passes
        every chunk through the view, a scroll through a stored session every chunk of it;
        only those near the view stay built)."""
        far: dict[LazyAnswer, list[list[Widget]]] = {}
        for row in self._lazy_rows():
            if reach is None:
                continue
            groups = [g for g in row.built_chunks() if not any(_overlaps(w, reach) for w in g)]
            if groups:
                far[row] = groups
        return far

    def _lazy_rows(self) -> list[LazyAnswer]:
        lazy = sys.modules.get("hermes_tui.widgets.lazy_answer")
        if lazy is None:
            # No long answer was ever mounted (an empty session's first frame): nothing to
            # build, and the Markdown parser stays unloaded until one is (Z2).
            return []
        return [row for row in self.transcript.children if isinstance(row, lazy.LazyAnswer)]

    def _reach(self, margin: bool = True, slack: float = 0.0) -> Region | None:
        """The view and a screen (and `slack` screens more) above and below it, or the view
        alone without `margin` (None before the first layout)."""
        view = self.transcript.region
        if not view.height:
            return None
        if not margin:
            return view
        rows = view.height + round(view.height * slack)
        return Region(view.x, view.y - rows, view.width, view.height + 2 * rows)


def _overlaps(widget: Widget, reach: Region) -> bool:
    region = widget.region
    return bool(region.height) and region.y < reach.bottom and region.bottom > reach.y


Parsed = list[tuple["LazyAnswer", list["Wanted"], list[Any]]]


async def _parse(near: dict[LazyAnswer, list[Wanted]]) -> Parsed:
    return [(answer, wanted, await answer.parse(wanted)) for answer, wanted in near.items()]


async def _build(parsed: Parsed, far: dict[LazyAnswer, list[list[Widget]]]) -> None:
    for answer, groups in far.items():
        await answer.release(groups)
    for answer, wanted, tokens in parsed:
        await answer.mount_parsed(wanted, tokens)

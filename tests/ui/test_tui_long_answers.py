"""Long answers cost what the screen shows (Z2, U5): a stored session of 300-line answers
builds only the Markdown near the view, and scrolling up builds (and pages in) the rest."""

from __future__ import annotations

import asyncio
import threading

from textual import events
from textual.widgets._markdown import MarkdownBlock, MarkdownFence
from waits import wait_until

from bench._long_answers import long_answer
from hermes_tui.clipboard import clip_for
from hermes_tui.widgets.lazy_answer import LazyAnswer, PendingChunk
from hermes_tui.widgets.messages import UserMessage

ANSWERS = 30
LINES_SCROLLED = 200
"""The answers' length in the scroll-up test: several chunks each, more than 10 to build."""


def answer_of(i: int, lines: int | None = None) -> str:
    """The i-th long answer (300 lines), or its first `lines` lines."""
    text = long_answer(i)
    return text if lines is None else "\n".join(text.splitlines()[:lines]) + "\n"


async def seed(app, answers: int, lines: int | None = None) -> str:
    """A stored session of questions, each answered by a 300-line Markdown answer (or its
    first `lines` lines). The rows are queued and flushed in one transaction."""
    session = await app.db.create_session(
        model="demo-model", provider="demo", workspace=str(app.workspace), title="long answers"
    )
    for i in range(answers):
        app.db.enqueue_message(session["id"], {"role": "user", "content": f"question {i}?"})
        app.db.enqueue_message(session["id"], {"role": "assistant", "content": answer_of(i, lines)})
    await app.db.flush()
    return session["id"]


def blocks(app) -> list[MarkdownBlock]:
    """Every Markdown block mounted in the transcript."""
    return list(app.transcript.query(MarkdownBlock))


def pending_in_view(app) -> list[PendingChunk]:
    """Chunks not built yet that the view shows."""
    view = app.transcript.region
    return [
        chunk
        for chunk in app.transcript.query(PendingChunk)
        if chunk.region.height and chunk.region.y < view.bottom and chunk.region.bottom > view.y
    ]


async def opened(app, pilot, session_id: str) -> None:
    """Resume `session_id` until its view is built. The screens around the view are built
    MARGIN_DELAY later, with no wait here: unless the test set its own delay, that build waits
    for a scroll, so what a test reads after this is the resume's own build (on a loaded
    machine the half second passed before the test looked, and it read the margin's build
    half done)."""
    if app.probes.margin_delay is None:
        app.probes.margin_delay = 3600.0
    await app.resume_session(session_id)
    await wait_until(pilot, lambda: not app.transcript.filling, what="the view built")


async def test_opening_long_answers_builds_only_the_bottom_screen(make_app):
    """Z2: 30 stored 300-line answers (about 750 KB): the window mounts a few rows and
    builds the Markdown of the bottom screen only, as whole blocks (no raw text in view)."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        session_id = await seed(app, ANSWERS)
        await opened(app, pilot, session_id)
        rows = app.transcript.children
        assert len(rows) <= 4  # bounded by height, not by the 50-row page
        assert isinstance(rows[-1], LazyAnswer) and rows[-1].source == long_answer(ANSWERS - 1)
        assert not pending_in_view(app)
        # The bottom of the last answer is built; a full build would be ~200 blocks per answer.
        assert 0 < app.probes.markdown_builds <= 4
        assert len(blocks(app)) <= 60
        fences = [f for f in app.transcript.query(MarkdownFence) if f.region.height]
        assert fences and fences[-1].code.startswith("def parse_")


async def test_an_opened_session_is_filling_until_its_bottom_is_built(make_app):
    """Z2: from the moment a session opens until its bottom screen is built, the view says
    it is filling; a caller waiting on it (a test, the benchmarks) never sees it idle in
    between (the fill is only asked for after the first frame)."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        session_id = await seed(app, 3)
        await app.resume_session(session_id)
        assert app.transcript.filling
        await wait_until(pilot, lambda: not app.transcript.filling, what="the view built")
        assert not pending_in_view(app)


class HeldParse:
    """The `parse_hold` probe: the parse thread waits there until the test releases it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.reached = asyncio.Event()
        self._gate = threading.Event()

    def __call__(self) -> None:
        self._loop.call_soon_threadsafe(self.reached.set)
        self._gate.wait(timeout=30)

    def release(self) -> None:
        self._gate.set()


async def test_the_screen_paints_while_long_answers_are_parsed(make_app):
    """Z2: the Markdown of the view's long answers is parsed while the screen goes on
    painting: with the parse held, frames go on and a typed key is echoed on screen (a build
    awaited in an after-refresh callback held the screen's loop, and every frame behind it)."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        session_id = await seed(app, 3)
        hold = HeldParse(asyncio.get_running_loop())
        app.probes.parse_hold = hold
        try:
            await app.resume_session(session_id)
            # Not pilot.pause(): it waits for the transcript's queue, where the fill is held.
            await asyncio.wait_for(hold.reached.wait(), 10)
            app.composer.focus()
            app.composer.post_message(events.Key("x", "x"))
            assert await asyncio.wait_for(app.screen.wait_for_refresh(), 5)
            assert await asyncio.wait_for(app.screen.wait_for_refresh(), 5)
            assert app.composer.text == "x" and app.transcript.filling
        finally:
            hold.release()
        await wait_until(pilot, lambda: not app.transcript.filling, what="the view built")
        assert not pending_in_view(app)


async def test_scrolling_up_builds_the_rest_and_pages_in_older_answers(make_app):
    """Z2, U5: scrolling up builds each chunk as it comes into view and pages in older rows
    at the top, until the session's first question; the window stays bounded.

    Two answers of 200 lines (8 chunks each): every scroll lays out the chunks built so far
    again, so two 300-line answers cost over twice as much for the same steps."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        session_id = await seed(app, 2, lines=LINES_SCROLLED)
        await opened(app, pilot, session_id)
        transcript = app.transcript
        built = app.probes.markdown_builds
        seen_pending_in_view = False
        for _ in range(400):
            first = transcript.children[0]
            at_top = transcript.scroll_y == 0
            if at_top and isinstance(first, UserMessage) and first.text == "question 0?":
                break
            transcript.scroll_relative(y=-30, animate=False, immediate=True)
            await wait_until(
                pilot,
                lambda: not transcript.filling and not transcript.paging,
                what="the view built after a scroll",
            )
            seen_pending_in_view = seen_pending_in_view or bool(pending_in_view(app))
            assert len(transcript.children) <= 8
        first = transcript.children[0]
        assert isinstance(first, UserMessage) and first.text == "question 0?"
        assert app.probes.markdown_builds > built + 10
        assert not seen_pending_in_view
        # The first answer's top is built Markdown on screen now.
        answer = transcript.children[1]
        assert isinstance(answer, LazyAnswer) and answer.source == answer_of(0, LINES_SCROLLED)
        assert not isinstance(answer.children[0], PendingChunk)


async def test_a_fill_asked_for_while_another_parses_is_not_dropped(make_app):
    """Z2, U5: a scroll that comes while a fill's parse is held asks for a fill of its own,
    and it is answered once the parse is released: the view scrolled to is built, never left
    as placeholders (a request made while a fill runs must not be lost)."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        session_id = await seed(app, 3)
        await opened(app, pilot, session_id)
        transcript = app.transcript
        hold = HeldParse(asyncio.get_running_loop())
        app.probes.parse_hold = hold
        try:
            # The first scroll's fill parses the chunks it brought near, and is held there.
            transcript.scroll_relative(y=-60, animate=False, immediate=True)
            await asyncio.wait_for(hold.reached.wait(), 10)
            # The second scroll lands in placeholders the held fill never looked at.
            transcript.scroll_relative(y=-90, animate=False, immediate=True)
            assert await asyncio.wait_for(app.screen.wait_for_refresh(), 5)
            assert await asyncio.wait_for(app.screen.wait_for_refresh(), 5)
            assert pending_in_view(app) and transcript.filling
        finally:
            hold.release()
        await wait_until(
            pilot, lambda: not transcript.filling and not transcript.paging, what="the view built"
        )
        assert not pending_in_view(app)


def blank_runs(answer: LazyAnswer) -> list[PendingChunk]:
    """The answer's placeholders that stand blank for chunks not built yet."""
    return [child for child in answer.children if isinstance(child, PendingChunk) and child.blank]


async def test_chunks_not_built_are_one_blank_run_split_only_where_the_view_nears(make_app):
    """Z2: an answer's chunks far from the view are one blank widget per run (a widget per
    chunk made a 1 MB session's open mount and lay out hundreds of placeholders); scrolling
    into a run builds what is near and leaves the rest blank at the rows it took."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        session_id = await seed(app, 3)
        await opened(app, pilot, session_id)
        answers = list(app.transcript.query(LazyAnswer))
        assert answers and len(answers[-1].chunks) > 6
        for answer in answers:
            # At most one run above the built part and one below it.
            assert len(blank_runs(answer)) <= 2
        last = answers[-1]
        (above,) = blank_runs(last)
        assert len(above.chunks) > 3 and above.outer_size.height == sum(above.heights or ())
        # Into the middle of the run: only the chunks near the view are built.
        transcript = app.transcript
        middle = last.virtual_region.y + above.outer_size.height // 2
        transcript.scroll_to(y=middle, animate=False, immediate=True)
        await wait_until(
            pilot,
            # At the middle first: before the scroll is applied, the bottom's view holds all
            # of this as well (nothing filling, nothing pending in view).
            lambda: (
                transcript.scroll_y == middle
                and not transcript.filling
                and not transcript.paging
                and not pending_in_view(app)
            ),
            what="the middle of the run built",
        )
        runs = blank_runs(last)
        assert len(runs) == 2 and all(run.outer_size.height == sum(run.heights) for run in runs)


async def test_a_resume_does_its_own_work_before_the_markdown_is_built(make_app):
    """Z2: a resume's first frames show the bottom screen's plain text, and the Markdown near
    the view is built once the resume is done (a build inside the resume held back its end:
    the status, the mode, the sessions list and the composer's focus)."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        session_id = await seed(app, 3)
        refresh = app.sessions.refresh

        async def slow_refresh() -> None:
            # Frames are drawn meanwhile: a fill asked for after the first one could run here.
            for _ in range(3):
                assert await asyncio.wait_for(app.screen.wait_for_refresh(), 5)
            await refresh()

        app.sessions.refresh = slow_refresh
        await app.resume_session(session_id)
        assert app.probes.markdown_builds == 0 and app.transcript.filling
        app.sessions.refresh = refresh
        await wait_until(pilot, lambda: not app.transcript.filling, what="the view built")
        assert app.probes.markdown_builds > 0 and not pending_in_view(app)


def overlaps_view(app, widgets) -> bool:
    """The widgets (one built chunk's) take rows the view shows."""
    view = app.transcript.region
    return widgets[0].region.y < view.bottom and widgets[-1].region.bottom > view.y


async def test_a_resume_builds_what_its_screen_shows_in_one_round(make_app, monkeypatch):
    """Z2: resuming 30 long answers builds the Markdown of the chunks its screen shows and no
    other, in one round (each chunk's estimated height is near its built one, so building
    them brings no other into view); the screen above is built at the first scroll."""
    app = make_app()
    app.probes.margin_delay = 3600.0  # the margin waits: what is built is the resume's own
    rounds = []
    mount_parsed = LazyAnswer.mount_parsed

    async def counted(self, wanted, parsed):
        rounds.append(len(wanted))
        await mount_parsed(self, wanted, parsed)

    monkeypatch.setattr(LazyAnswer, "mount_parsed", counted)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        session_id = await seed(app, ANSWERS)
        await opened(app, pilot, session_id)
        last = app.transcript.children[-1]
        assert isinstance(last, LazyAnswer)
        built = last.built_chunks()
        assert built and not pending_in_view(app)
        assert all(overlaps_view(app, widgets) for widgets in built)
        assert app.probes.markdown_builds == len(built) and len(rounds) == 1
        # One line up: the fill reaches a screen above the view now, and builds it.
        app.transcript.scroll_relative(y=-1, animate=False, immediate=True)
        await wait_until(
            pilot,
            lambda: len(last.built_chunks()) > len(built) and not app.transcript.filling,
            what="the screen above built",
        )
        assert not all(overlaps_view(app, widgets) for widgets in last.built_chunks())


async def test_the_screen_above_a_resumed_view_is_built_after_the_margin_delay(make_app):
    """Z2: left alone, a resumed session builds the screen above its view once the margin's
    delay has passed (a PageUp soon after the resume finds it built); each chunk built is
    about the height it was estimated at."""
    app = make_app()
    app.probes.margin_delay = 0.01
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        session_id = await seed(app, 3)
        await opened(app, pilot, session_id)
        last = app.transcript.children[-1]
        await wait_until(
            pilot,
            lambda: not all(overlaps_view(app, widgets) for widgets in last.built_chunks()),
            what="the screen above the view built",
        )
        assert not pending_in_view(app)
        # Each chunk's estimate was near its built height: building the view's brought no
        # other chunk into it (an estimate 20 % high made each resume build in two rounds).
        width = last.content_region.width
        for widgets in last.built_chunks():
            height = widgets[-1].virtual_region.bottom - widgets[0].virtual_region.y
            assert abs(widgets[0].lazy_chunk.estimated_height(width) - height) <= 2


def built_rows(app) -> int:
    """Rows the long answers' built chunks take (Markdown and plain pieces, not blank runs)."""
    rows = 0
    for answer in app.transcript.query(LazyAnswer):
        for widgets in answer.built_chunks():
            rows += widgets[-1].virtual_region.bottom - widgets[0].virtual_region.y
    return rows


async def test_scrolling_through_long_answers_keeps_only_what_is_near_the_view_built(make_app):
    """Z2: scrolling from the bottom of a session of 300-line answers to its top and back,
    the Markdown mounted stays a few screens' worth at every step (chunks built far from the
    view go back to blank runs of the rows they took), and what is scrolled back to is built
    again. Kept, every scroll laid out all the blocks built so far: slower and bigger the
    further the user went."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        # Two 200-line answers: over 20 screens, past the 6 screens a kept build outgrows by
        # its fifth step (the way up and back took 30 s with three 300-line ones).
        session_id = await seed(app, 2, LINES_SCROLLED)
        app.probes.margin_delay = 0.01
        await opened(app, pilot, session_id)
        transcript = app.transcript
        screen = transcript.region.height
        seen: list[tuple[int, int]] = []

        async def step(rows: int) -> None:
            transcript.scroll_relative(y=rows, animate=False, immediate=True)
            await wait_until(
                pilot,
                lambda: not transcript.filling and not transcript.paging,
                what="the view built after a scroll",
            )
            assert not pending_in_view(app)
            seen.append((built_rows(app), len(blocks(app))))
            # Chunks are built within a screen of the view and released past a screen and a
            # half (fill.RELEASE_SLACK); a chunk the edge cuts stays whole (a part of an
            # answer, under a screen here): about 125 rows and 35 blocks at most, where
            # keeping them all grew by a screen a step, to over 1,000 rows and 300 blocks.
            assert seen[-1][0] <= 6 * screen and seen[-1][1] <= 70, seen

        for _ in range(200):
            first = transcript.children[0]
            if transcript.scroll_y == 0 and getattr(first, "text", None) == "question 0?":
                break
            await step(-screen)
        assert getattr(transcript.children[0], "text", None) == "question 0?"
        for _ in range(200):
            if transcript.scroll_y >= transcript.max_scroll_y:
                break
            await step(screen)
        assert transcript.scroll_y >= transcript.max_scroll_y
        assert len(seen) > 20, seen  # the session is many screens long


async def test_releasing_a_stored_answers_chunks_moves_nothing_on_screen(make_app):
    """Z2: built chunks of a stored answer that go back to blank rows take the rows they
    took built (margins between blocks included): the answer keeps its height, the blocks
    in view stay on their rows, and the blank run joins the one next to it."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        session_id = await seed(app, 3)
        app.probes.margin_delay = 3600.0
        await opened(app, pilot, session_id)
        transcript = app.transcript
        last = transcript.children[-1]
        assert isinstance(last, LazyAnswer)
        # Up into the answer's middle, with a screen above and below built around the view.
        transcript.scroll_to(y=last.virtual_region.y + 200, animate=False, immediate=True)
        await wait_until(
            pilot,
            lambda: (
                transcript.scroll_y == last.virtual_region.y + 200
                and not transcript.filling
                and not pending_in_view(app)
            ),
            what="the middle built",
        )
        groups = [g for g in last.built_chunks() if not overlaps_view(app, g)]
        in_view = [g for g in last.built_chunks() if overlaps_view(app, g)]
        assert groups and in_view
        height, rows = last.virtual_size.height, [g[0].region.y for g in in_view]
        runs = len(blank_runs(last))
        await last.release(groups)
        assert await asyncio.wait_for(app.screen.wait_for_refresh(), 5)
        assert last.virtual_size.height == height
        assert [g[0].region.y for g in in_view] == rows
        assert len(blank_runs(last)) == runs  # joined with the runs above and below
        # Copying the answer copies its source, built or blank (U3).
        clip = clip_for(None, last, list(transcript.children))
        assert clip is not None and clip.text == last.source.strip("\n")


async def test_building_a_chunk_above_the_view_moves_nothing_on_screen(make_app):
    """Z2: a chunk above what the view shows, inside the same long answer, is built at a
    height a row or two off its estimate; the blocks on screen stay on their rows. The view
    was held by the answer's own top, so everything seen moved by the estimate's error."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        session_id = await seed(app, 3)
        app.probes.margin_delay = 3600.0
        await opened(app, pilot, session_id)
        transcript = app.transcript
        last = transcript.children[-1]
        assert isinstance(last, LazyAnswer)
        moved: list[int] = []
        for _ in range(12):
            with transcript.window.fill.held():
                # Up by most of a screen: the top of the view shows rows not built yet, the
                # bottom the blocks built before (no fill runs until the block ends).
                transcript.scroll_relative(
                    y=-(transcript.region.height - 6), animate=False, immediate=True
                )
                assert await asyncio.wait_for(app.screen.wait_for_refresh(), 5)
                view = transcript.region
                seen = [
                    (block, block.region.y)
                    for block in last.query(MarkdownBlock)
                    if block.parent is last and view.y <= block.region.y < view.bottom
                ]
                assert seen, "no built block starts in view"
                print(
                    "before",
                    transcript.scroll_y,
                    last.region.y,
                    last.virtual_region.y,
                    [(type(b).__name__, y) for b, y in seen][:3],
                )
            await wait_until(pilot, lambda: not transcript.filling, what="the view built")
            assert not pending_in_view(app)
            print(
                "after",
                transcript.scroll_y,
                last.region.y,
                last.virtual_region.y,
                [(type(b).__name__, b.region.y) for b, y in seen][:3],
            )
            moved.extend(block.region.y - y for block, y in seen if block.is_attached)
            if any(moved):
                break
        assert moved and not any(moved), moved

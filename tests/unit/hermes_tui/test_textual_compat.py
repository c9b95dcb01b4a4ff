"""Each of hermes_tui/textual_compat.py's touches of Textual's internals still holds (#28).

Small host apps through Textual's pilot. A failure here names the compat function that a
Textual upgrade broke; the rest of the front end reaches Textual's internals only through
it (test_compat_seams.py).
"""

from __future__ import annotations

import importlib

import pytest
from markdown_it import MarkdownIt
from rich.segment import Segment
from textual import events
from textual._xterm_parser import XTermParser
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.filter import ANSIToTruecolor, LineFilter
from textual.widget import Widget
from textual.widgets import Markdown, Static
from waits import wait_until

from hermes_tui import textual_compat as compat


class Host(App):
    """A bare app around the widgets of one test."""

    def __init__(self, *widgets: Widget) -> None:
        super().__init__()
        self.widgets = widgets

    def compose(self) -> ComposeResult:
        yield from self.widgets


class Recording(LineFilter):
    """A line filter that counts the lines it sees."""

    lines = 0

    def apply(self, segments: list[Segment], background) -> list[Segment]:
        self.lines += 1
        return segments


async def test_add_line_filter_sees_every_rendered_line():
    app = Host(Static("hello"))
    recording = Recording()
    async with app.run_test() as pilot:
        compat.add_line_filter(app, recording)
        app.refresh()
        await wait_until(
            pilot,
            lambda: recording.lines > 0,
            what="Textual no longer applies App._filters: fix textual_compat.add_line_filter",
        )


async def test_refresh_ansi_theme_rebuilds_the_truecolour_filter():
    app = Host()
    async with app.run_test():
        before = [f for f in app._filters if isinstance(f, ANSIToTruecolor)]
        compat.refresh_ansi_theme(app)
        after = [f for f in app._filters if isinstance(f, ANSIToTruecolor)]
        assert len(after) == 1 and after[0] is not before[0], (
            "Textual keeps its truecolour filter elsewhere: fix textual_compat.refresh_ansi_theme"
        )
        assert after[0]._terminal_theme is app.ansi_theme


async def test_anchor_released_follows_the_users_scrolling():
    view = VerticalScroll(*[Static(f"line {i}") for i in range(60)])
    app = Host(view)
    async with app.run_test(size=(40, 10)) as pilot:
        view.anchor()
        await wait_until(pilot, lambda: view.scroll_y == view.max_scroll_y > 0)
        assert not compat.anchor_released(view)
        view.scroll_to(y=0, animate=False)  # as the wheel and the scroll bar do
        await wait_until(
            pilot,
            lambda: compat.anchor_released(view),
            what="scrolling up no longer releases the anchor: fix textual_compat.anchor_released",
        )
        assert view.is_anchored  # why the release is read: the anchor itself stays set


async def test_being_removed_holds_from_the_start_of_a_removal():
    label = Static("going")
    app = Host(VerticalScroll(label))
    async with app.run_test():
        assert not compat.being_removed(label)
        removal = label.remove()
        assert compat.being_removed(label) and label.parent is not None  # begun, not done
        await removal
        assert label.parent is None


async def test_a_reflow_after_a_scroll_arranges_the_screen_once(monkeypatch):
    from textual._compositor import Compositor

    compat.reflow_from_the_last_map()
    compat.reflow_from_the_last_map()  # once per process, however often it is asked
    per_reflow: list[int] = []  # full arrangements during each reflow
    arrange_root, reflow = Compositor._arrange_root, Compositor.reflow

    def counting_arrange(self, root, size, visible_only=True):
        if not visible_only and per_reflow:
            per_reflow[-1] += 1
        return arrange_root(self, root, size, visible_only=visible_only)

    def counting_reflow(self, parent, size):
        per_reflow.append(0)
        return reflow(self, parent, size)

    monkeypatch.setattr(Compositor, "_arrange_root", counting_arrange)
    monkeypatch.setattr(Compositor, "reflow", counting_reflow)
    view = VerticalScroll(*[Static(f"line {i}") for i in range(60)])
    app = Host(view)
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        view.scroll_to(y=5, animate=False)  # a scroll-only frame: Textual marks its map stale
        await wait_until(pilot, lambda: view.scroll_y == 5)
        await pilot.pause()
        per_reflow.clear()
        # A row mounted: its reflow sets the scrollbar's sizes, whose repaint asks its size.
        await view.mount(Static("the new row"))
        await app.screen.wait_for_refresh()
        await pilot.pause()
        assert per_reflow, "mounting a row no longer reflows the screen"
        assert set(per_reflow) == {1}, (
            f"full arrangements in each reflow: {per_reflow} (1 each): fix "
            "textual_compat.reflow_from_the_last_map"
        )


class Corners(App):
    """Four panes: the top left and the bottom right change, the two others do not."""

    CSS = "Horizontal { height: 1fr; } Static { width: 1fr; height: 1fr; }"

    def compose(self) -> ComposeResult:
        from textual.containers import Horizontal

        with Horizontal():
            yield Static("top left", id="tl")
            yield Static("top right", id="tr")
        with Horizontal():
            yield Static("bottom left", id="bl")
            yield Static("bottom right", id="br")


async def test_a_partial_frame_renders_only_the_widgets_whose_regions_changed(monkeypatch):
    from rich.console import Console
    from textual._compositor import Compositor

    compat.partial_updates_render_what_changed()
    compat.partial_updates_render_what_changed()  # once per process, however often it is asked
    rendered: list[str] = []
    render_lines = Widget.render_lines

    def counting_render_lines(self, crop):
        rendered.append(self.id or type(self).__name__)
        return render_lines(self, crop)

    monkeypatch.setattr(Widget, "render_lines", counting_render_lines)
    app = Corners()
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        screen = app.screen
        corners = {app.query_one("#tl", Static), app.query_one("#br", Static)}
        for corner in corners:
            corner.update(f"{corner.id}, changed", layout=False)
        # What a frame does, by hand: the box around both changes is the whole screen.
        compositor = screen._compositor
        compositor.update_widgets(corners)
        changed = set(compositor._dirty_regions)
        rendered.clear()
        update = compositor.render_update()
        assert update is not None
        console = Console(width=40, force_terminal=True, color_system="truecolor")
        shown = update.render_segments(console)
        assert "tl" in rendered and "br" in rendered
        untouched = {"tr", "bl"} & set(rendered)
        assert not untouched, (
            f"a frame that changed two corners rendered the others too ({sorted(untouched)}): "
            "fix textual_compat.partial_updates_render_what_changed"
        )
        # The same frame as Textual renders it: the same cells reach the terminal.
        compositor._dirty_regions.update(changed)
        with monkeypatch.context() as unpatched:
            unpatched.setattr(Compositor, "_get_renders", Compositor._get_renders.original)
            unpatched.setattr(
                Compositor, "render_partial_update", Compositor.render_partial_update.original
            )
            rendered.clear()
            whole = compositor.render_update()
        assert {"tr", "bl"} <= set(rendered)  # what it saves: Textual renders every pane
        assert whole is not None
        assert whole.render_segments(console) == shown


def test_a_painted_styles_cache_dies_with_its_widget():
    import gc
    import weakref

    from textual._styles_cache import StylesCache
    from textual.color import Color

    compat.styles_caches_die_with_their_widgets()
    compat.styles_caches_die_with_their_widgets()  # once per process, however often it is asked
    cache = StylesCache()
    base, background = Color(10, 20, 30), Color(200, 100, 0, 0.5)
    inner, outer = cache.get_inner_outer(base, background)  # as render_line asks it
    assert (inner.background, outer.background) == (base + background, base), (
        "StylesCache.get_inner_outer answers otherwise: fix "
        "textual_compat.styles_caches_die_with_their_widgets"
    )
    gone = weakref.ref(cache)
    del cache
    gc.collect()
    assert gone() is None, (
        "a painted StylesCache outlives its widget: fix "
        "textual_compat.styles_caches_die_with_their_widgets"
    )


async def test_markdown_blocks_and_block_token_build_blocks_from_tokens():
    markdown = Markdown("")
    app = Host(markdown)
    async with app.run_test():
        tokens = MarkdownIt("gfm-like").parse("# Title\n\nsome text\n")
        blocks = compat.markdown_blocks(markdown, tokens)
        types = [compat.block_token(block).type for block in blocks]
        assert types == ["heading_open", "paragraph_open"], (
            "fix textual_compat.markdown_blocks / textual_compat.block_token"
        )


class SharingMarkdown(Markdown):
    BLOCKS = {name: compat.sharing_inline_styles(block) for name, block in Markdown.BLOCKS.items()}


async def test_sibling_blocks_share_their_inline_styles():
    markdown = SharingMarkdown("\n\n".join(f"para **{i}** `x`" for i in range(5)))
    app = Host(markdown)
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: len(markdown.children) == 5)
        await wait_until(
            pilot,
            lambda: markdown.__dict__.get("_shared_inline_styles"),
            timeout=5,
            what="Textual no longer asks _get_component_classes: fix SharedInlineStyles",
        )
        first, *rest = markdown.children
        styles = first._component_styles
        assert styles, "Textual computes component styles elsewhere: fix SharedInlineStyles"
        for block in rest:
            assert block._component_styles == styles, (
                "siblings' inline styles are not shared: fix textual_compat.SharedInlineStyles"
            )
        # Copied styles render as computed ones: bold is bold in every paragraph.
        strong = {b.get_component_rich_style("strong").bold for b in markdown.children}
        assert strong == {True}


class KeyCatcher(Widget, can_focus=True):
    seen: list[str]

    def __init__(self) -> None:
        super().__init__()
        self.seen = []

    async def _on_key(self, event: events.Key) -> None:
        self.seen.append(event.key)


async def test_textual_still_dispatches_private_handlers():
    catcher = KeyCatcher()
    app = Host(catcher)
    async with app.run_test() as pilot:
        catcher.focus()
        await pilot.press("x")
        await wait_until(
            pilot,
            lambda: catcher.seen == ["x"],
            what="Textual no longer calls _on_<event> handlers: fix the PRIVATE_HANDLERS users",
        )


@pytest.mark.parametrize(("module", "cls", "name"), sorted(compat.PRIVATE_HANDLERS))
def test_each_overridden_private_handler_still_exists(module, cls, name):
    owner = getattr(importlib.import_module(module), cls)
    assert callable(getattr(owner, name, None)), (
        f"Textual's {cls}.{name} is gone: fix textual_compat.PRIVATE_HANDLERS and its user "
        f"({compat.PRIVATE_HANDLERS[(module, cls, name)]})"
    )


def test_add_key_sequence_teaches_the_key_parser():
    # The sequence the app teaches it (terminal_keys.install); adding it again changes nothing.
    compat.add_key_sequence("\x1b\r", "alt+enter")
    parser = XTermParser()
    keys = [e.key for e in [*parser.feed("a\x1b\rb"), *parser.feed("")] if hasattr(e, "key")]
    assert keys == ["a", "alt+enter", "b"], "fix textual_compat.add_key_sequence"


async def test_write_to_terminal_finds_the_driver_it_writes_through():
    """write_to_terminal: a running app's `_driver` has write, flush and is_headless."""
    from textual.app import App

    from hermes_tui.textual_compat import write_to_terminal

    app = App()
    async with app.run_test():
        driver = app._driver
        assert driver is not None and driver.is_headless
        assert callable(driver.write) and callable(driver.flush)
        write_to_terminal(app, "\a")  # headless: nothing is written, nothing fails


async def test_plain_no_color_swaps_textuals_monochrome_for_no_colour(monkeypatch):
    from rich.style import Style
    from textual.filter import Monochrome, NoColor

    monkeypatch.setenv("NO_COLOR", "1")
    app = Host(Static("hello"))
    async with app.run_test():
        assert any(isinstance(f, Monochrome) for f in app._filters), (
            "Textual answers NO_COLOR without Monochrome: check textual_compat.plain_no_color"
        )
        compat.plain_no_color(app)
        assert [f for f in app._filters if isinstance(f, Monochrome)] == []
        [plain] = [f for f in app._filters if isinstance(f, NoColor)]
        [segment] = plain.apply([Segment("x", Style(color="red", bgcolor="blue", bold=True))], None)
        assert segment.style.color.is_default and segment.style.bgcolor.is_default
        assert segment.style.bold

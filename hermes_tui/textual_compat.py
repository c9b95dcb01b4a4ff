"""Every use of Textual's private internals, in one place, each with why (no other module may).

Textual has no public way to do these things; each function names the private it relies on,
and tests/unit/hermes_tui/test_textual_compat.py checks each one against the installed
Textual, so an upgrade that breaks one fails there, naming the function to fix.
tests/unit/architecture/test_compat_seams.py keeps every other module off Textual's privates.
Nothing here imports Textual's Markdown at import time (the first frame loads no parser).
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from functools import cache
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from markdown_it.token import Token
    from textual.app import App
    from textual.filter import LineFilter
    from textual.geometry import Region
    from textual.widget import Widget
    from textual.widgets import Markdown
    from textual.widgets.markdown import MarkdownBlock


# Textual dispatches an event to `_on_<event>` then `on_<event>` along the class's MRO, and
# keeps some widgets' own handling in the `_on_` one. These overrides rely on that: each
# entry is (Textual module, class, method) -> who overrides it and why.
PRIVATE_HANDLERS: dict[tuple[str, str, str], str] = {
    ("textual.widgets", "TextArea", "_on_key"): (
        "Composer: the completion picker and history keys run before TextArea's own keys"
    ),
    ("textual.widgets", "TextArea", "_on_paste"): (
        "Composer: a large paste turns soft wrap off before TextArea inserts it"
    ),
    ("textual.widgets", "Markdown", "_on_mount"): (
        "LazyAnswer: prevent_default() skips Markdown's mount, which parses the whole source"
    ),
    ("textual.widget", "Widget", "_on_mouse_scroll_up"): (
        "Transcript: the wheel at the very top asks for older rows"
    ),
}
"""Textual's private handlers our widgets override (checked by the architecture test)."""


class _Key(str):
    """A key name as Textual's sequence table holds it (its parser reads `.value`)."""

    @property
    def value(self) -> str:
        """The key's name."""
        return str(self)


def add_key_sequence(sequence: str, key: str) -> None:
    """Make Textual's key parser read `sequence` as `key` (a sequence it knows is kept).

    Uses `textual._ansi_sequences.ANSI_SEQUENCES_KEYS`, the parser's table of escape
    sequences: there is no public way to name one it reads as another key.
    """
    from textual import _ansi_sequences

    # Textual declares the table a read-only Mapping of its Keys enum; it is the dict its
    # parser reads, and a key name that is a str with `.value` is all the parser asks of one.
    table = cast(MutableMapping[str, object], _ansi_sequences.ANSI_SEQUENCES_KEYS)
    table.setdefault(sequence, (_Key(key),))


def add_line_filter(app: App[Any], line_filter: LineFilter) -> None:
    """Add a filter over every rendered line of `app`.

    Uses `App._filters`, the list Textual builds its own filters into (no colour, dim,
    truecolour) and applies to each line; there is no public way to add one.
    """
    app._filters.append(line_filter)


def plain_no_color(app: App[Any]) -> None:
    """Under NO_COLOR, send no colour at all: the terminal's own colours, as no-color.org asks.

    Textual honours NO_COLOR with its `Monochrome` filter on a truecolour theme: greys, still
    written as colour codes. This swaps it, in `App._filters`, for Textual's `NoColor`,
    which keeps bold, dim, italic, underline and reverse and drops every colour.
    """
    from textual.filter import Monochrome, NoColor

    app._filters = [
        NoColor() if isinstance(line_filter, Monochrome) else line_filter
        for line_filter in app._filters
    ]
    if not any(isinstance(line_filter, NoColor) for line_filter in app._filters):
        app._filters.append(NoColor())


def refresh_ansi_theme(app: App[Any]) -> None:
    """Rebuild the truecolour filter for the app's ANSI theme, as setting `App.theme` does.

    Uses `App._refresh_truecolor_filter`: the first theme is applied without setting
    `App.theme` (which would queue a second full CSS parse before the first frame).
    """
    app._refresh_truecolor_filter(app.ansi_theme)


def anchor_released(widget: Widget) -> bool:
    """True when the user's scrolling released the widget's anchor (it stops following).

    Uses `Widget._anchor_released`: `is_anchored` stays true after such a release, and the
    release is what decides whether new content scrolls into view.
    """
    return widget._anchor_released


def being_removed(widget: Widget) -> bool:
    """True once `widget`'s removal has begun (while it runs, and after).

    Uses `Widget._pruning`: a widget keeps its parent (and its place among its siblings)
    until its removal is done, so what is mounted next to it meanwhile stays behind.
    """
    return widget._pruning


def reflow_from_the_last_map() -> None:
    """A full reflow answers the lookups made while it arranges from the last full map, not
    by arranging the whole screen a second time (once per process; Z2, U5).

    A scroll-only frame (`Compositor.reflow_visible`: the transcript following the bottom)
    marks Textual's full map stale (`Compositor._full_map_invalidated`), and a full reflow
    never clears that mark. The next reflow (a sent message's bubble mounted) sets the
    transcript's scrollbar sizes while it arranges; the scrollbar's repaint asks its size,
    and with the mark set that one lookup arranged every widget again, rows off screen and
    all: with a long session open it was a third of Enter's layout, and every later lookup
    of an off-screen row (the long-answer fill's) arranged it all again too. The reflow
    replaces the map anyway, so the mark is cleared as it starts: lookups meanwhile read the
    last map, as they do when no scroll came between, and after it the map is the new one.

    Wraps `Compositor.reflow` (textual._compositor) and clears
    `Compositor._full_map_invalidated`.
    """
    from textual._compositor import Compositor

    reflow = Compositor.reflow
    if getattr(reflow, "reads_the_last_map", False):
        return

    def reflow_reading_the_last_map(self: Compositor, parent: Widget, size: Any) -> Any:
        self._full_map_invalidated = False
        return reflow(self, parent, size)

    reflow_reading_the_last_map.reads_the_last_map = True  # type: ignore[attr-defined]
    Compositor.reflow = reflow_reading_the_last_map  # type: ignore[method-assign]


def partial_updates_render_what_changed() -> None:
    """A partial frame renders the widgets its changed regions touch, not every widget in
    the box around them (once per process; issue 27).

    Textual renders a partial update by cropping the screen to the box that holds every
    changed region, then asking each widget in that box for its lines (from its cache, but
    cropped and run through the line filters each time) and dropping those outside the
    changed spans. While an answer streams, the spinner under the transcript and the status
    panel's token count change in the same frames as the answer: the box was the whole screen,
    and the sessions list, the key bar, the composer and every visible block of the answer
    were rendered for nothing in every frame. Only the changed spans reach the terminal
    (`ChopsUpdate` skips a chop no widget filled), and any widget visible inside a changed
    region overlaps it, so leaving out the widgets that overlap none changes no cell.

    Wraps `Compositor.render_partial_update` and `Compositor._get_renders`
    (textual._compositor), and narrows `Compositor._visible_widgets` while the renders are
    taken (after the frame's cuts are made from the whole map).
    """
    from textual._compositor import Compositor

    get_renders = Compositor._get_renders
    if getattr(get_renders, "renders_what_changed", False):
        return
    render_partial_update = Compositor.render_partial_update
    changed_regions: dict[int, list[Region]] = {}  # by compositor, while it renders a partial

    def render_partial_update_of_what_changed(self: Compositor) -> Any:
        self.cuts  # noqa: B018  # made from every visible widget before the renders are narrowed
        changed_regions[id(self)] = list(self._dirty_regions)
        try:
            return render_partial_update(self)
        finally:
            changed_regions.pop(id(self), None)

    def get_renders_of_what_changed(self: Compositor, crop: Region | None = None) -> Any:
        regions = changed_regions.get(id(self))
        if not regions:
            return get_renders(self, crop)
        visible = self.visible_widgets
        touched = {}
        for widget, (region, clip) in visible.items():
            shown = region.intersection(clip)
            if any(shown.overlaps(changed) for changed in regions):
                touched[widget] = (region, clip)
        self._visible_widgets = touched
        try:
            return list(get_renders(self, crop))  # the generator reads the widgets at once
        finally:
            self._visible_widgets = visible

    get_renders_of_what_changed.renders_what_changed = True  # type: ignore[attr-defined]
    # Textual's own, for the test that checks both send the same cells to the terminal.
    get_renders_of_what_changed.original = get_renders  # type: ignore[attr-defined]
    render_partial_update_of_what_changed.original = render_partial_update  # type: ignore[attr-defined]
    Compositor._get_renders = get_renders_of_what_changed  # type: ignore[method-assign]
    Compositor.render_partial_update = render_partial_update_of_what_changed  # type: ignore[method-assign]


def styles_caches_die_with_their_widgets() -> None:
    """A removed widget's rendered lines die with it, not up to 1,024 widgets later (once
    per process; Z2, U5).

    `StylesCache.get_inner_outer` (textual._styles_cache) is an `lru_cache` on a method, so
    its key holds the `StylesCache` itself: every widget ever painted kept its styles cache,
    and with it every line it rendered (a `Strip` and its seven small caches each), until
    1,024 later widgets pushed it out. A long answer's blocks kept some 5,000 objects alive
    per session switch, each rescanned by every full collection. The two colours are the
    whole answer, so the cache is kept on them alone.
    """
    from functools import lru_cache

    from textual._styles_cache import StylesCache

    if getattr(StylesCache.get_inner_outer, "keyed_on_colours", False):
        return
    inner_outer = StylesCache.get_inner_outer.__wrapped__

    @lru_cache(1024)
    def get_inner_outer(base_background: Any, background: Any) -> Any:
        return inner_outer(None, base_background, background)

    get_inner_outer.keyed_on_colours = True  # type: ignore[attr-defined]
    StylesCache.get_inner_outer = staticmethod(get_inner_outer)  # type: ignore[method-assign,assignment]


def markdown_blocks(markdown: Markdown, tokens: Iterable[Token]) -> list[MarkdownBlock]:
    """The block widgets `markdown` would mount for `tokens` (parsed by its parser).

    Uses `Markdown._parse_markdown`: blocks built from tokens parsed off the UI thread.
    """
    return list(markdown._parse_markdown(tokens))


def block_token(block: MarkdownBlock) -> Token:
    """The markdown-it token a mounted block was built from.

    Uses `MarkdownBlock._token`: its type and tag tell which widget a block is.
    """
    return block._token


class SharedInlineStyles:
    """Mixin for Markdown blocks: siblings share their inline styles (em, strong, s, code).

    Textual computes a block's component styles by matching the whole stylesheet once per
    component class for every block it mounts, and a long streamed answer mounts hundreds of
    identical paragraphs: that was a fifth of the UI thread's time (bench ui). Blocks with the
    same type, classes, pseudo-classes and parent get the same result from the same rules, so
    the first one computes them and its siblings copy them, until the stylesheet is rebuilt
    (a theme change makes a new rules map) or that first block leaves the DOM.

    Uses `DOMNode._get_component_classes` (overridden: Textual asks it just before computing
    component styles), `DOMNode._component_styles`, `DOMNode._pseudo_classes_cache_key`,
    `DOMNode._parent` and `MarkdownBlock._markdown_ref`.
    """

    def _get_component_classes(self) -> frozenset[str]:
        # An empty answer tells Textual there is nothing left to compute. A mixin: `self` is
        # the MarkdownBlock it is mixed into, and the super() call reaches DOMNode's method.
        node: MarkdownBlock = self  # type: ignore[assignment]
        classes: frozenset[str] = super()._get_component_classes()  # type: ignore[misc]
        markdown = node._markdown_ref()
        if not classes or markdown is None or not node.is_attached:
            return classes
        rules_map = node.app.stylesheet.rules_map
        shared = markdown.__dict__.setdefault("_shared_inline_styles", {})
        key = (type(node), node.classes, node._pseudo_classes_cache_key, id(node._parent))
        entry = shared.get(key)
        if entry is not None:
            source, source_rules = entry
            styles = source._component_styles
            if (
                source is not node
                and source_rules is rules_map
                and source._parent is node._parent
                and styles.keys() == classes
            ):
                if node._component_styles != styles:
                    node._component_styles = dict(styles)
                    node.refresh()
                return frozenset()
        shared[key] = (node, rules_map)
        return classes


@cache
def sharing_inline_styles(block_class: type[MarkdownBlock]) -> type[MarkdownBlock]:
    """`block_class` with shared inline styles, under the same name so CSS matches alike."""
    return type(block_class.__name__, (SharedInlineStyles, block_class), {})


def write_to_terminal(app: App[Any], data: str) -> None:
    """Write `data` (an escape sequence) to the terminal between frames. Private:
    `App._driver`, the only door to the output (App.bell() writes its BEL through it);
    nothing is written when the app has no driver (not running, or a headless test)."""
    driver = getattr(app, "_driver", None)
    if driver is not None and not driver.is_headless:
        driver.write(data)
        driver.flush()

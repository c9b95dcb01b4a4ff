"""A foldable block (reasoning, tool output) folds from the keyboard: Enter and space (U3).

Its action is its own (`fold`), not Textual's `toggle(attribute)` it once shadowed.
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from ui.tui_helpers import type_keys
from waits import wait_until

from hermes_tui.widgets.foldable import Foldable


class _Host(App[None]):
    def compose(self) -> ComposeResult:
        yield Foldable()


async def test_enter_and_space_fold_and_unfold_a_focused_block() -> None:
    """U3: keyboard first; each key flips the block once."""
    async with _Host().run_test() as pilot:
        block = pilot.app.query_one(Foldable)
        block.focus()
        await wait_until(pilot, lambda: block.has_focus, what="the block focused")
        await type_keys(pilot, "enter")
        await wait_until(pilot, lambda: block.expanded, what="unfolded by enter")
        await type_keys(pilot, "space")
        await wait_until(pilot, lambda: not block.expanded, what="folded by space")

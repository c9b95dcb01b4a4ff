"""/help shows each binding's id beside its key, so a user can remap it (issue 17 item 10)."""

from __future__ import annotations

from ui.tui_helpers import reply
from waits import wait_until

from hermes_tui.keys import KEY_BINDINGS
from hermes_tui.screens.help import HelpScreen


async def test_help_lists_every_binding_id_on_its_key_s_line(make_app, scripted_in_process):
    app = make_app(scripted_in_process({"replies": [reply("hi")]}))
    async with app.run_test(size=(140, 40)) as pilot:
        await app.ready()
        await app.submit("/help")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="/help")
        lines = str(app.screen.query_one("#help-keys").content).splitlines()
        for binding in KEY_BINDINGS:
            [line] = [line for line in lines if line.rstrip().endswith(f"  {binding.id}")]
            assert binding.description in line, line
        newline = next(line for line in lines if line.startswith("newline"))
        assert "alt+enter or ctrl+j" in newline

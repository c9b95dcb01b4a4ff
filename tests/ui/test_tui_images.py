"""Images in the TUI (SPEC G4): the chip of an attached image, live, on resume, and its
snapshot."""

from __future__ import annotations

import base64
import io

from mcp_servers import stdio_entry
from PIL import Image
from ui.tui_helpers import reply, run_turn, settled_screen, type_keys

from hermes_tui.widgets.messages import UserMessage, chip_label

SIZE = (100, 24)


def write_png(path, width: int, height: int) -> int:
    """A flat PNG at `path`; its size in bytes."""
    out = io.BytesIO()
    Image.new("RGB", (width, height), (30, 90, 160)).save(out, "PNG")
    path.write_bytes(out.getvalue())
    return len(out.getvalue())


async def test_an_image_chip_names_its_shape_and_size_live_and_on_resume(
    make_app, scripted_in_process, workspace
):
    """G4: `@shot.png` shows `▣ shot.png · 1280x720 · N KB`, and the same chip on resume."""
    size = write_png(workspace / "shot.png", 1280, 720)
    server = scripted_in_process({"replies": [reply("A blue screen.")]})
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await run_turn(pilot, "what is on @shot.png")
        [live] = app.transcript.query(UserMessage)
        expected = f"▣ shot.png · 1280x720 · {round(size / 1024)} KB"
        assert [chip_label(a) for a in live.attachments] == [(expected, True)]
        session_id = app.agent.session_id
        await app.run_command("/new")
        await pilot.pause()
        await app.resume_session(session_id)
        await pilot.pause()
        [stored] = app.transcript.query(UserMessage)
        assert [chip_label(a)[0] for a in stored.attachments] == [expected]


def test_image_chip_snapshot(snap_compare, make_app, scripted_in_process, workspace):
    """G4: the image chip beside a file chip, as the screen shows them."""
    write_png(workspace / "shot.png", 1280, 720)
    server = scripted_in_process({"replies": [reply("The dialog is cut off at the right edge.")]})
    app = make_app(server)

    async def sent(pilot):
        await run_turn(pilot, "why is the dialog in @shot.png cut off? see @README.md")
        await settled_screen(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=sent)


async def test_a_dropped_image_outside_the_workspace_attaches_as_a_kept_copy(
    make_app, scripted_in_process, tmp_path
):
    """G4: a terminal's drop (a pasted, quoted path) of an image outside the workspace puts
    its `@pasted:` mention in the composer; sent, the model gets the image."""
    from textual import events
    from waits import wait_until

    outside = tmp_path / "Pictures" / "my shot.png"
    outside.parent.mkdir()
    size = write_png(outside, 40, 30)
    server = scripted_in_process({"replies": [reply("A small blue box.")]})
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        app.composer.post_message(events.Paste(f"'{outside}'"))
        await wait_until(pilot, lambda: "@pasted:" in app.composer.text, what="the mention")
        mention = app.composer.text.strip()
        assert mention.startswith("@pasted:my-shot-") and mention.endswith(".png")
        await run_turn(pilot, f"what is this {mention}")
        [sent] = app.transcript.query(UserMessage)
        assert [chip_label(a)[0] for a in sent.attachments] == [
            f"▣ {mention[1:]} · 40x30 · {size} B"
        ]
        [image] = server.requests[-1].images
        assert image.data == outside.read_bytes()


async def test_ctrl_v_without_a_clipboard_tool_says_so_in_one_sentence(
    make_app, scripted_in_process, monkeypatch
):
    """G4: with neither wl-paste nor xclip, ctrl+v tells which tool to install."""
    from waits import wait_until

    from hermes_tui.image_paste import NO_TOOL

    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("DISPLAY", raising=False)
    server = scripted_in_process({"replies": [reply("ok")]})
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        shown: list[str] = []
        app.notify = lambda message, **_kw: shown.append(str(message))  # type: ignore[method-assign]
        await type_keys(pilot, "ctrl+v")
        await wait_until(pilot, lambda: shown, what="the notice")
        assert shown == [NO_TOOL]


async def test_g4_an_mcp_image_result_shows_a_chip_in_its_tool_block(
    make_app, scripted_in_process, hermes_home
):
    """G4: an MCP tool's image result shows as a chip under its block's header, folded or
    not (not only as the text note), live and in a resumed transcript."""
    from mcp_servers import SCREENSHOT_PNG
    from ui.test_tui_mcp import manager, with_servers
    from waits import wait_until

    from hermes_tui.widgets.tool_block import ToolBlock

    size = len(base64.b64decode(SCREENSHOT_PNG))
    expected = f"▣ mcp__s__screenshot image 1 · 8x6 · {size} B"
    call = {"id": "c1", "name": "mcp__s__screenshot", "arguments": {}}
    server = scripted_in_process({"replies": [reply(tool_calls=[call]), reply("I see it.")]})
    app = with_servers(make_app(server, approval="yolo"), hermes_home, {"s": stdio_entry("normal")})
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await wait_until(pilot, lambda: manager(app).tools(), timeout=20, what="the MCP tools")
        await run_turn(pilot, "take a screenshot")
        [live] = app.transcript.query(ToolBlock)
        assert [chip_label(a) for a in live.images] == [(expected, True)]
        assert not live.expanded and live.image_chips is not None and live.image_chips.display
        assert expected in str(live.image_chips.content)
        session_id = app.agent.session_id
        await app.run_command("/new")
        await pilot.pause()
        await app.resume_session(session_id)
        await wait_until(pilot, lambda: app.transcript.query(ToolBlock), what="the stored block")
        [stored] = app.transcript.query(ToolBlock)
        assert [chip_label(a)[0] for a in stored.images] == [expected]

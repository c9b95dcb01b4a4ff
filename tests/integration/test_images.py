"""Images reach models that take them, on both wires (SPEC G4), over real HTTP and SQLite.

Each test reads the exact image part the scripted server received (`RecordedRequest.images`
decodes it) and checks it decodes to a valid image within the documented size.
"""

from __future__ import annotations

import base64
import io
import json
import sqlite3

import pytest
from helpers import unmarked
from mcp_harness import call
from mcp_servers import SCREENSHOT_PNG, stdio_entry
from PIL import Image, ImageDraw

from agent import events as ev
from agent.attachments import NO_IMAGES
from agent.images import MAX_BYTES, MAX_SIDE
from agent.messages import TOOL_IMAGES_NOTE
from agent.requests import NOT_SENT

WIRES = ["openai", "anthropic"]


def png(width: int, height: int, *, text: bool = False) -> bytes:
    """A PNG of `width` x `height`: flat, or (`text`) lines of text, like a screenshot."""
    image = Image.new("RGB", (width, height), (20, 120, 200))
    if text:
        draw = ImageDraw.Draw(image)
        for y in range(0, height, 40):
            draw.text((20, y), f"line {y}: def screenshot(): return 'hello' * 3", fill=(0, 0, 0))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def decoded(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()  # the whole image decodes, not only its header
    return image


def attachment_events(harness) -> list[dict]:
    return [
        dict(a) for e in harness.events if isinstance(e, ev.InputAttached) for a in e.attachments
    ]


@pytest.mark.parametrize("wire", WIRES)
def test_an_at_image_reaches_the_model_as_an_image_part(harness, wire):
    """G4: `@shot.png` goes as an `image_url` data part (OpenAI) or a base64 `image` block
    (Anthropic), the text marking it, the chip naming its size."""
    data = png(64, 48)
    (harness.workspace / "shot.png").write_bytes(data)
    agent = harness.start({"replies": [{"text": "a blue box"}]}, wire=wire)
    assert agent.run_turn("what is in @shot.png").status == "ok"
    [request] = harness.server.requests_for(wire)
    [seen] = request.images
    assert (seen.role, seen.media_type, seen.data) == ("user", "image/png", data)
    assert decoded(seen.data).size == (64, 48)
    encoded = base64.b64encode(data).decode()
    # The latest user turn carries a prompt-cache breakpoint on its last block ($1): not ours.
    content = unmarked(request.body["messages"][-1]["content"])
    if wire == "openai":
        assert content[1] == {
            "type": "image_url",
            "image_url": {"url": f"data:image/png;base64,{encoded}"},
        }
    else:
        assert content[1] == {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": encoded},
        }
    assert content[0]["type"] == "text"
    assert '<attached_image path="shot.png" width="64" height="48"' in content[0]["text"]
    [chip] = attachment_events(harness)
    assert chip == {
        "path": "shot.png",
        "kind": "image",
        "width": 64,
        "height": 48,
        "bytes": len(data),
        "media_type": "image/png",
    }


@pytest.mark.parametrize("wire", WIRES)
def test_a_big_image_is_scaled_under_the_documented_size(harness, wire):
    """G4: a 3000x2000 screenshot is sent at most MAX_SIDE on its longest side and at most
    MAX_BYTES encoded, in its proportions, still a PNG (sharp text); a file without an
    image's extension is told by its bytes."""
    (harness.workspace / "capture").write_bytes(png(3000, 2000, text=True))
    agent = harness.start({"replies": [{"text": "seen"}]}, wire=wire)
    assert agent.run_turn("see @capture").status == "ok"
    [seen] = harness.server.requests_for(wire)[0].images
    image = decoded(seen.data)
    assert image.size == (MAX_SIDE, MAX_SIDE * 2 // 3)
    assert len(seen.data) <= MAX_BYTES
    assert seen.media_type == Image.MIME[image.format] == "image/png"


@pytest.mark.parametrize("wire", WIRES)
def test_a_model_without_images_gets_one_sentence_and_no_image(harness, wire):
    """G4: `providers.NAME.models.MODEL.images: false`: the image is refused in one sentence
    (the chip and the model's text say it), and no request carries an image."""
    (harness.workspace / "shot.png").write_bytes(png(32, 32))
    agent = harness.start(
        {"replies": [{"text": "text only"}]},
        wire=wire,
        provider={"models": {"test-model": {"images": False}}},
    )
    assert agent.run_turn("look at @shot.png").status == "ok"
    [request] = harness.server.requests_for(wire)
    assert request.images == []
    assert NO_IMAGES in json.dumps(request.body)
    [chip] = attachment_events(harness)
    assert chip == {"path": "shot.png", "kind": "image", "refused": NO_IMAGES}


def test_a_non_image_with_an_image_extension_is_refused(harness):
    """G4: a text file named like an image is refused as not an image (its bytes decide)."""
    (harness.workspace / "fake.png").write_text("just some text\n")
    (harness.workspace / "cut.png").write_bytes(png(40, 40)[:60])  # a PNG cut short
    agent = harness.start({"replies": [{"text": "ok"}]})
    assert agent.run_turn("see @fake.png and @cut.png").status == "ok"
    assert harness.server.requests_for("openai")[0].images == []
    fake, cut = attachment_events(harness)
    assert fake["refused"] == "not an image: its bytes are not PNG, JPEG, GIF or WebP"
    assert cut["refused"].startswith("a broken or unreadable PNG image (")
    assert "\n" not in cut["refused"]


def blobs_in(harness) -> list[tuple[str, int]]:
    with sqlite3.connect(harness.home / "state.db") as conn:
        return conn.execute("SELECT sha256, length(data) FROM session_blobs").fetchall()


@pytest.mark.parametrize("wire", WIRES)
def test_an_image_is_stored_once_and_a_resumed_session_sends_it_again(harness, wire):
    """G4: two turns carrying the same image keep one blob in the session, the rows hold a
    reference (no base64), and a resumed session's request inlines it from the store."""
    data = png(50, 30)
    (harness.workspace / "shot.png").write_bytes(data)
    script = {"replies": [{"text": "one"}, {"text": "two"}, {"text": "three"}]}
    agent = harness.start(script, wire=wire)
    assert agent.run_turn("first @shot.png").status == "ok"
    assert agent.run_turn("again @shot.png").status == "ok"
    agent.writer.flush(agent.session_id, tokens=False, when="test")
    assert len(blobs_in(harness)) == 1 and blobs_in(harness)[0][1] == len(data)
    rows = harness.rows(agent.session_id)
    encoded = base64.b64encode(data).decode()
    assert not any(encoded[:40] in json.dumps(row) for row in rows)
    second = harness.server.requests_for(wire)[1]
    assert [seen.data for seen in second.images] == [data, data]

    other = harness.agent()
    other.resume(agent.session_id)
    assert other.run_turn("and now, without it?").status == "ok"
    third = harness.server.requests_for(wire)[2]
    assert [seen.data for seen in third.images] == [data, data]
    assert len(blobs_in(harness)) == 1


def test_a_model_switched_to_one_without_images_reads_a_line_instead(harness):
    """G4: history images are not sent to a model known not to take them: a line says so."""
    (harness.workspace / "shot.png").write_bytes(png(20, 20))
    agent = harness.start(
        {"replies": [{"text": "one"}, {"text": "two"}]},
        provider={"models": {"blind": {"images": False}}},
    )
    assert agent.run_turn("see @shot.png").status == "ok"
    agent.set_model("scripted:blind")
    assert agent.run_turn("and now?").status == "ok"
    last = harness.server.requests_for("openai")[-1]
    assert last.images == []
    assert NOT_SENT.format(name="shot.png") in json.dumps(last.body)


@pytest.mark.parametrize("wire", WIRES)
def test_an_mcp_image_result_reaches_the_model_as_an_image(mcp, wire):
    """G4: an MCP tool's image goes to the model as an image: inside the tool result on the
    Anthropic wire; on the OpenAI wire (tool messages carry text only) in a user message
    right after the batch's results, which the result's text announces."""
    agent = mcp.start(
        {"replies": [call("mcp__s__screenshot"), {"text": "I see it"}]},
        {"s": stdio_entry("normal")},
        wire=wire,
    )
    result = agent.run_turn("take a screenshot")
    assert result.status == "ok", result.error
    second = mcp.h.server.requests_for(wire)[1]
    [seen] = second.images
    assert seen.data == base64.b64decode(SCREENSHOT_PNG)
    assert decoded(seen.data).size == (8, 6)
    messages = second.body["messages"]
    if wire == "anthropic":
        assert seen.in_tool_result and seen.part == "image"
        [block] = messages[-1]["content"]
        assert block["type"] == "tool_result" and block["tool_use_id"] == "call_1"
        assert block["content"][0]["type"] == "text"
    else:
        assert seen.part == "image_url"
        tool, after = messages[-2], messages[-1]
        assert tool["role"] == "tool" and tool["content"].endswith(TOOL_IMAGES_NOTE)
        assert after["role"] == "user" and after["content"][1]["type"] == "image_url"
    [row] = mcp.tool_rows(result.session_id)
    assert SCREENSHOT_PNG[:30] not in json.dumps(row)
    assert row["display_metadata"]["images"][0]["width"] == 8


@pytest.mark.parametrize(("wire", "tokens"), [("openai", 765), ("anthropic", 1600)])
def test_g4_the_context_estimate_counts_each_image_by_its_wire(harness, wire, tokens):
    """G4: the next request's estimate (the context bar, compaction's threshold) and the
    /context report count a 1568 px image by the wire's documented formula, not as 0."""
    from dataclasses import replace

    from agent.context_report import context_report
    from agent.models import estimate_request
    from hermes_tui.commands.project import context_lines

    (harness.workspace / "shot.png").write_bytes(png(MAX_SIDE, MAX_SIDE))
    agent = harness.start({"replies": [{"text": "a blue square"}]}, wire=wire)
    assert agent.run_turn("what is in @shot.png").status == "ok"
    request = agent.request()
    assert request.wire == wire
    bare = [replace(m, images=[]) for m in request.messages]
    assert estimate_request(request) - estimate_request(replace(request, messages=bare)) == tokens
    report = context_report(agent)
    assert (report.images, report.image_tokens) == (1, tokens)
    assert report.history > tokens
    history = next(line for line in context_lines(report) if "history" in line)
    assert history.endswith(f"messages, 1 image(s) {tokens:,}")


def exported(harness, session_id: str) -> str:
    """The session's Markdown export, as /export writes it."""
    from hermes_tui.export import to_markdown

    harness.loop.run(harness.db.flush())
    session = harness.loop.run(harness.db.get_session(session_id))
    rows = harness.rows(session_id)
    return to_markdown(session, rows, summary=lambda name, _args: name, marker=lambda *_: None)


def test_g4_the_markdown_export_shows_an_image_as_its_chip(harness):
    """G4: the export shows an attached image as its chip in a code span (the path, shape
    and size), never the `<attached_image>` line the model reads, nor its bytes."""
    data = png(64, 48)
    (harness.workspace / "my `shot`.png").write_bytes(data)
    agent = harness.start({"replies": [{"text": "a blue box"}]})
    assert agent.run_turn('what is in @"my `shot`.png"').status == "ok"
    text = exported(harness, agent.session_id)
    assert "<attached_image" not in text
    assert f"``▣ my `shot`.png · 64x48 · {len(data)} B``" in text
    assert "what is in" in text


def test_g4_the_markdown_export_shows_an_mcp_image_result_as_its_chip(mcp):
    """G4: a tool result's image is a chip line under its output in the export."""
    agent = mcp.start(
        {"replies": [call("mcp__s__screenshot"), {"text": "I see it"}]},
        {"s": stdio_entry("normal")},
    )
    assert agent.run_turn("take a screenshot").status == "ok"
    size = len(base64.b64decode(SCREENSHOT_PNG))
    text = exported(mcp.h, agent.session_id)
    assert f"`▣ mcp__s__screenshot image 1 · 8x6 · {size} B`" in text

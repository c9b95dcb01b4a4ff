"""Images scaled and checked for a model (SPEC G4): agent/images.py and agent/pasted_images.py."""

from __future__ import annotations

import io
import os
import struct
import zlib

import pytest
from PIL import Image

from agent import pasted_images
from agent.images import MAX_BYTES, MAX_SIDE, TOO_MANY_PIXELS, ImageRefused, prepare


def encoded(image: Image.Image, form: str) -> bytes:
    out = io.BytesIO()
    image.save(out, form)
    return out.getvalue()


def declared_png(width: int, height: int) -> bytes:
    """A PNG whose header declares `width` x `height` (a bomb's shape), with one tiny row."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    idat = zlib.compress(b"\x00" * 16)
    chunks = chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    return b"\x89PNG\r\n\x1a\n" + chunks


def test_a_decompression_bomb_is_refused_before_it_is_decoded():
    """G4: a small file declaring 30000x30000 pixels is one sentence, not 2.7 GB of memory."""
    for side in (9_000, 30_000):  # past our limit; past Pillow's own too
        with pytest.raises(ImageRefused) as refused:
            prepare(declared_png(side, side))
        assert str(refused.value) == TOO_MANY_PIXELS


def test_a_photo_that_stays_too_big_as_png_becomes_a_jpeg_under_the_cap():
    """G4: noise (a photo's worst case) saved as a 3 MB PNG goes as JPEG within MAX_BYTES."""
    noise = Image.frombytes("RGB", (1200, 900), os.urandom(1200 * 900 * 3))
    prepared = prepare(encoded(noise, "PNG"))
    assert prepared.media_type == "image/jpeg" and len(prepared.data) <= MAX_BYTES
    assert Image.open(io.BytesIO(prepared.data)).size == (1200, 900)


def test_transparency_is_kept_as_webp_and_a_small_gif_is_sent_as_it_is():
    """G4: an image with transparency scaled down keeps it (WebP); a small GIF is untouched."""
    clear = Image.new("RGBA", (MAX_SIDE * 2, 100), (255, 0, 0, 0))
    clear.putpixel((3, 3), (0, 0, 0, 255))
    noisy = Image.frombytes("RGBA", (2000, 800), os.urandom(2000 * 800 * 4))
    prepared = prepare(encoded(noisy, "PNG"))
    assert prepared.media_type == "image/webp"
    assert Image.open(io.BytesIO(prepared.data)).mode == "RGBA"
    assert prepare(encoded(clear, "PNG")).media_type == "image/png"  # it fits as PNG
    gif = encoded(Image.new("P", (20, 10)), "GIF")
    assert prepare(gif).data == gif


def test_a_pasted_mention_names_only_a_file_of_the_pasted_folder(tmp_path):
    """G4: `@pasted:NAME` reaches nothing but a bare name under the home's pasted folder."""
    mention = pasted_images.keep(tmp_path, encoded(Image.new("RGB", (4, 4)), "PNG"), "a b/c")
    name = mention.removeprefix("@pasted:")
    assert name.startswith("a-b-c-") and name.endswith(".png")
    assert pasted_images.resolve(tmp_path, f"pasted:{name}") == tmp_path / "pasted" / name
    (tmp_path / "secret.png").write_bytes(b"x")
    for raw in ("pasted:../secret.png", "pasted:/etc/passwd", "pasted:", f"x{name}"):
        assert pasted_images.resolve(tmp_path, raw) is None
    with pytest.raises(ImageRefused):
        pasted_images.keep(tmp_path, b"not an image")

"""Images for a model (SPEC G4): recognised by their bytes, scaled and re-encoded under the
size both wires take, decompression bombs refused.

A PNG, JPEG, GIF or WebP whose longest side is at most `MAX_SIDE` pixels and whose file is
at most `MAX_BYTES` is sent as it is (once it has decoded whole). A bigger one is scaled so
its longest side is `MAX_SIDE`, then encoded: a PNG stays PNG while it fits (screenshots keep
their sharp text), else an opaque image becomes JPEG and one with transparency WebP, at
falling quality and then smaller, until it fits. Every problem is one sentence
(`ImageRefused`), never a traceback.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import dataclass

from agent.messages import ImagePart

MAX_SIDE = 1568
"""The longest side sent, in pixels: Anthropic's recommended most, under OpenAI's 2048."""
MAX_BYTES = 1_000_000
"""The most an encoded image may take (base64 adds a third on the wire)."""
MAX_SOURCE_BYTES = 40 * 1024 * 1024
"""The largest image file read at all."""
MAX_PIXELS = 64_000_000
"""More pixels than this (width x height) is refused before anything is decoded: a small
file can declare a huge canvas (a decompression bomb)."""
TOO_MANY_PIXELS = f"more pixels than an image may have (at most {MAX_PIXELS // 1_000_000} million)"
IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})
"""File names that say "image"; the bytes decide (`sniff`)."""
KINDS = "PNG, JPEG, GIF or WebP"
_JPEG_QUALITIES = (85, 70, 55)
_MEDIA_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


class ImageRefused(Exception):
    """An image that cannot be sent; the message is one sentence."""


@dataclass(frozen=True)
class PreparedImage:
    """The bytes to send and what they are."""

    data: bytes
    media_type: str
    width: int
    height: int
    scaled: bool

    def part(self, name: str) -> ImagePart:
        """This image as a message's part, named `name` (its path, or a tool's name)."""
        digest = hashlib.sha256(self.data).hexdigest()
        return ImagePart(
            digest, self.media_type, name, self.width, self.height, len(self.data), self.data
        )


def sniff(head: bytes) -> str | None:
    """The Pillow format the first bytes of a file announce (PNG, JPEG, GIF, WEBP), or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "PNG"
    if head.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "GIF"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WEBP"
    return None


def media_type_of(head: bytes) -> str | None:
    """The media type (`image/png`, ...) the first bytes announce, or None."""
    kind = sniff(head)
    return _MEDIA_TYPES[kind] if kind else None


def prepare(data: bytes) -> PreparedImage:
    """`data` as an image a model takes: within `MAX_SIDE` and `MAX_BYTES`."""
    kind = sniff(data)
    if kind is None:
        raise ImageRefused(f"not an image: its bytes are not {KINDS}")
    if len(data) > MAX_SOURCE_BYTES:
        raise ImageRefused(f"over {MAX_SOURCE_BYTES // 2**20} MB, too big to read as an image")
    from PIL import Image

    try:
        with warnings.catch_warnings():
            # Pillow warns (and past twice its limit raises) about a bomb; our own pixel
            # check below is the limit, and it comes before any pixel is decoded.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=[kind]) as image:
                width, height = image.size
                if width * height > MAX_PIXELS:
                    raise ImageRefused(TOO_MANY_PIXELS)
                if max(width, height) <= MAX_SIDE and len(data) <= MAX_BYTES:
                    image.load()  # it decodes whole, or it is refused here, not by the server
                    return PreparedImage(data, _MEDIA_TYPES[kind], width, height, False)
                if kind == "JPEG":  # decoded at a fraction of its size when that is enough
                    image.draft("RGB", (MAX_SIDE, MAX_SIDE))
                image.load()
                return _scaled(image, kind, len(data) / (width * height))
    except ImageRefused:
        raise
    except Image.DecompressionBombError:  # Pillow's own limit, far past ours
        raise ImageRefused(TOO_MANY_PIXELS) from None
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise ImageRefused(f"a broken or unreadable {kind} image ({_reason(exc)})") from None


def _scaled(image: object, kind: str, bytes_per_pixel: float) -> PreparedImage:
    """A copy of `image` within `MAX_SIDE`, encoded within `MAX_BYTES`."""
    from PIL import Image, ImageOps

    assert isinstance(image, Image.Image)
    frame = ImageOps.exif_transpose(image)  # a phone photo turned the way it was taken
    has_alpha = frame.mode in ("RGBA", "LA", "PA") or "transparency" in frame.info
    frame = frame.convert("RGBA" if has_alpha else "RGB")
    # reducing_gap: a fast box reduction first, then Lanczos on the last step (same look).
    frame.thumbnail((MAX_SIDE, MAX_SIDE), Image.Resampling.LANCZOS, reducing_gap=2.0)
    # A PNG whose source took this many bytes a pixel will not fit as PNG: not tried (a
    # photo saved as PNG, noise), which saves the slowest encode.
    png_may_fit = bytes_per_pixel * frame.width * frame.height <= 2 * MAX_BYTES
    while True:
        if kind == "PNG" and png_may_fit:
            encoded = _encode(frame, "PNG")
            if len(encoded) <= MAX_BYTES:
                return _prepared(encoded, "PNG", frame)
        form = "WEBP" if has_alpha else "JPEG"
        for quality in _JPEG_QUALITIES:
            encoded = _encode(frame, form, quality=quality)
            if len(encoded) <= MAX_BYTES:
                return _prepared(encoded, form, frame)
        # Still too big at the lowest quality (noise, a huge canvas): a smaller picture.
        smaller = (max(1, frame.width * 3 // 4), max(1, frame.height * 3 // 4))
        frame = frame.resize(smaller, Image.Resampling.LANCZOS)


def _encode(frame: object, form: str, **options: object) -> bytes:
    out = io.BytesIO()
    frame.save(out, format=form, **options)  # type: ignore[attr-defined]
    return out.getvalue()


def _prepared(encoded: bytes, form: str, frame: object) -> PreparedImage:
    width, height = frame.size  # type: ignore[attr-defined]
    return PreparedImage(encoded, _MEDIA_TYPES[form], width, height, True)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().rstrip(".") or type(exc).__name__
    return text[:120]


def size_words(size: int) -> str:
    """A byte count as a chip says it: `214 KB`, `1.2 MB`."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    return f"{size / (1024 * 1024):.1f} MB"

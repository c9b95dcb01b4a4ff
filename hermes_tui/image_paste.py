"""Images into the composer (G4): a pasted or dropped image path becomes its `@` mention,
and a clipboard image is read with the system's tool (`wl-paste`, `xclip`).

A path inside the workspace is mentioned as it is (`@shots/a.png`); one outside is copied
under the app's home first (agent/pasted_images.py), as a clipboard image is. What cannot be
done is one sentence for a notice.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlparse

from agent import pasted_images
from agent.attachments import mention_for
from agent.images import MAX_SOURCE_BYTES, ImageRefused, sniff

CLIPBOARD_TIMEOUT = 3.0
"""How long a clipboard tool may take to hand over an image (seconds)."""
IMAGE_TYPE = "image/png"
NO_TOOL = (
    "No clipboard tool for images: install wl-clipboard (Wayland) or xclip (X11), "
    "or paste the image's path."
)
NO_IMAGE = "The clipboard holds no image (paste text with the terminal's paste key)."


class PasteRefused(Exception):
    """An image that cannot be pasted; the message is one sentence."""


def dropped_paths(text: str) -> list[Path] | None:
    """The paths a paste names when it is nothing but paths (a terminal's drop), else None."""
    text = text.strip()
    if not text or len(text) > 16_384:  # a drop is a few names, not a pasted document
        return None
    try:
        words = shlex.split(text)  # quoted and backslash-escaped names, as terminals drop them
    except ValueError:
        return None
    paths = []
    for word in words:
        if word.startswith("file://"):
            word = unquote(urlparse(word).path)
        if not word.startswith(("/", "~")):
            return None
        paths.append(Path(word).expanduser())
    return paths or None


def is_image_file(path: Path) -> bool:
    """True for a regular file whose first bytes are an image's."""
    try:
        if not path.is_file():
            return False
        with path.open("rb") as handle:
            return sniff(handle.read(16)) is not None
    except OSError:
        return False


def mention_of_dropped(path: Path, workspace: Path, home: Path) -> str:
    """The mention attaching a dropped image file: its workspace path, else a kept copy."""
    resolved = path.resolve()
    if resolved.is_relative_to(workspace.resolve()):
        return mention_for(resolved.relative_to(workspace.resolve()).as_posix())
    try:
        if resolved.stat().st_size > MAX_SOURCE_BYTES:
            raise PasteRefused(f"{path.name} is over {MAX_SOURCE_BYTES // 2**20} MB.")
        data = resolved.read_bytes()
        return pasted_images.keep(home, data, resolved.stem)
    except ImageRefused as exc:
        raise PasteRefused(f"{path.name}: {exc}.") from None
    except OSError as exc:
        raise PasteRefused(f"{path.name} cannot be read ({exc.strerror}).") from None


def image_mentions(text: str, workspace: Path, home: Path) -> str | None:
    """What a paste becomes when it names only image files: their mentions, else None."""
    paths = dropped_paths(text)
    if not paths or not all(is_image_file(path) for path in paths):
        return None
    return " ".join(mention_of_dropped(path, workspace, home) for path in paths) + " "


def clipboard_commands() -> list[tuple[list[str], list[str]]]:
    """(list the clipboard's types, read its PNG) for each tool this system has."""
    tools = []
    if os.environ.get("WAYLAND_DISPLAY") and shutil.which("wl-paste"):
        tools.append((["wl-paste", "--list-types"], ["wl-paste", "--type", IMAGE_TYPE]))
    if os.environ.get("DISPLAY") and shutil.which("xclip"):
        base = ["xclip", "-selection", "clipboard", "-o", "-t"]
        tools.append(([*base, "TARGETS"], [*base, IMAGE_TYPE]))
    return tools


def clipboard_image() -> bytes:
    """The clipboard's image as PNG bytes, or PasteRefused saying why there is none."""
    tools = clipboard_commands()
    if not tools:
        raise PasteRefused(NO_TOOL)
    for list_types, read in tools:
        try:
            types = _run(list_types).decode("utf-8", "replace").split()
            if IMAGE_TYPE not in types:
                continue
            data = _run(read)
        except (OSError, subprocess.SubprocessError):
            continue
        if sniff(data) is not None:
            return data
    raise PasteRefused(NO_IMAGE)


def _run(command: list[str]) -> bytes:
    done = subprocess.run(
        command,
        capture_output=True,
        timeout=CLIPBOARD_TIMEOUT,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return done.stdout[: MAX_SOURCE_BYTES + 1]

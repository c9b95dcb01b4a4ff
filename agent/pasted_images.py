"""Images pasted or dropped from outside the workspace, kept under the app's home (G4).

A clipboard image, or a dropped file outside the workspace, is copied to
`$HERMES_TUI_HOME/pasted/` under a name made of its own hash, and the composer gets the
mention `@pasted:NAME`. Only the user's text is expanded, so only the user can attach one;
the name is a bare file name (no folder, no `..`), and it is attached only as an image.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from agent.images import MAX_SOURCE_BYTES, ImageRefused, sniff
from storage.files import atomic_write, private_dir

PREFIX = "pasted:"
"""How a mention names a pasted image: `@pasted:shot-1a2b3c4d.png`."""
FOLDER = "pasted"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,100}")
_EXTENSIONS = {"PNG": ".png", "JPEG": ".jpg", "GIF": ".gif", "WEBP": ".webp"}


def keep(home: Path, data: bytes, stem: str = "pasted") -> str:
    """Keep pasted image bytes under `home`; the mention that attaches them."""
    kind = sniff(data)
    if kind is None:
        raise ImageRefused("not an image: its bytes are not PNG, JPEG, GIF or WebP")
    if len(data) > MAX_SOURCE_BYTES:
        raise ImageRefused(f"over {MAX_SOURCE_BYTES // 2**20} MB, too big to read as an image")
    clean = re.sub(r"[^A-Za-z0-9_-]+", "-", stem).strip("-")[:40] or "pasted"
    name = f"{clean}-{hashlib.sha256(data).hexdigest()[:8]}{_EXTENSIONS[kind]}"
    folder = private_dir(Path(home) / FOLDER)
    target = folder / name
    if not target.exists():  # the same bytes pasted twice are one file
        atomic_write(target, data)
    return f"@{PREFIX}{name}"


def resolve(home: Path | None, raw: str) -> Path | None:
    """The file a `pasted:NAME` mention names (None: not such a mention, or no such file)."""
    if home is None or not raw.startswith(PREFIX):
        return None
    name = raw[len(PREFIX) :].rstrip(".,;:!?)]}'")
    if not _NAME.fullmatch(name) or ".." in name:
        return None
    path = Path(home) / FOLDER / name
    return path if path.is_file() and not path.is_symlink() else None

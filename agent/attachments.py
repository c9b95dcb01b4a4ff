"""`@path` mentions in a user message: the files and folders they name, attached (SPEC P2).

`expand` finds each `@path` (`@"a path with spaces"` too) that names something in the
workspace and appends its contents (a file) or listing (a folder) to the text the model
reads, under caps: a file's share, the message's budget, a number of attachments. Paths are
resolved as the file tools resolve them (agent/tools/paths.py: no link followed out of the
workspace, every component checked), so an outside path or a link out is refused with the
tools' sentence; binary files are refused; secrets are redacted as tool output is (H5).
A mention that names nothing stays plain text (`@decorator`, `@someone`).

An image (PNG, JPEG, GIF, WebP, told by its bytes) is attached as an image part for a model
that takes images (agent/images.py scales it; SPEC G4), outside the text budget; the text
marks where it belongs. For a model known not to take images it is refused in one sentence.

Each attachment is also described as a plain dict (`path`, `kind`, `lines` or `entries`,
`chars`, `truncated`, `refused`), kept in the user row's display metadata so the transcript
shows chips instead of the contents, live and on resume.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent import pasted_images
from agent.images import IMAGE_EXTENSIONS, MAX_SOURCE_BYTES, ImageRefused, prepare, sniff
from agent.messages import ImagePart
from agent.text_cuts import cut_at_line_end
from agent.tools import paths
from agent.tools.registry import ToolError

MENTION = re.compile(r'(?<![^\s(\[{,;])@(?:"([^"\n]+)"|([^\s"@]+))')
"""`@` at the start or after a space or an opening bracket; the path, quoted or not."""
TRAILING = ".,;:!?)]}'"
"""Sentence punctuation after a mention (`see @a.py.`), dropped when the path needs it not."""
MAX_ATTACHMENTS = 20
MAX_FILE_CHARS = 100_000
"""One file's share; a longer file is cut at a line end, and says so."""
MAX_MESSAGE_CHARS = 200_000
"""All attachments of one message together (less when the model's window is small)."""
MIN_SHARE = 2_000
"""A file that does not fit whole is attached only if this much of it still fits."""
MAX_DIR_ENTRIES = 200
BINARY_SNIFF = 8192
ATTACHMENTS_KEY = "attachments"
"""The user row's `display_metadata` key listing what was attached."""
SHOWN_KEY = "shown"
"""The user row's `display_metadata` key holding what the user typed, where the model read
something else (a custom command's prompt)."""
SKIPPED_IN_LISTING = frozenset({".git"})
FILE_NAME = re.compile(r"(?:[^/]+/)*[^/]*[^/.]\.[A-Za-z][A-Za-z0-9]{0,7}")
"""A mention that names a file by its extension (`@nosuchfile.py`, `@src/x.ts`): when it
names nothing, that is said (`@decorator`, `@someone`, `@types/node` stay plain text)."""
NO_SUCH_FILE = "no such file in the workspace: nothing attached"
NO_IMAGES = "the model does not take images (its config says images: false)"


@dataclass(frozen=True)
class Expansion:
    """The text for the model (mentions' contents appended) and what was attached."""

    content: str
    attachments: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    images: tuple[ImagePart, ...] = field(default_factory=tuple)


def mentions(text: str) -> list[tuple[str, int, int]]:
    """(path as written, start, end) of every `@path` in `text`, in order."""
    found = []
    for match in MENTION.finditer(text):
        raw = match.group(1) or match.group(2)
        found.append((raw, match.start(), match.end()))
    return found


def mention_for(path: str) -> str:
    """How a path is written as a mention: quoted when it holds a space or a quote-free `@`."""
    return f'@"{path}"' if any(ch.isspace() for ch in path) or "@" in path else f"@{path}"


def _resolve(workspace: Any, raw: str) -> tuple[paths.Target | None, str | None]:
    """The mention's target (None: it names nothing there), or why it is refused."""
    candidates = [raw]
    stripped = raw.rstrip(TRAILING)
    if stripped and stripped != raw:
        candidates.append(stripped)
    refusal: str | None = None
    for candidate in candidates:
        try:
            target = paths.resolve(workspace, candidate)
        except ToolError as exc:
            # Outside the workspace, or a link out of it, as the file tools refuse them;
            # any other error (a file used as a folder) means the mention names nothing.
            if str(exc).startswith("Refused") and refusal is None:
                refusal = str(exc)
            continue
        if target.final is not None:
            return target, None
    return None, refusal


def _names_a_file(raw: str) -> bool:
    """True when the mention is written as a file name with an extension."""
    return FILE_NAME.fullmatch(raw.rstrip(TRAILING)) is not None


class _Budget:
    """How many characters the message's attachments may still take."""

    def __init__(self, chars: int) -> None:
        self.left = chars

    def share(self) -> int:
        return max(0, min(MAX_FILE_CHARS, self.left))

    def spend(self, chars: int) -> None:
        self.left -= chars


def expand(
    text: str,
    workspace: Any,
    *,
    redact: Callable[[str], str] = lambda s: s,
    budget_chars: int = MAX_MESSAGE_CHARS,
    images: bool = True,
    home: Path | None = None,
) -> Expansion:
    """`text` with every mentioned file's contents and folder's listing appended, and its
    images (`images` False: the model takes none, so they are refused); `@pasted:NAME`
    names an image pasted into `home` (agent/pasted_images.py)."""
    found = mentions(text)
    if not found:
        return Expansion(text)
    budget = _Budget(min(budget_chars, MAX_MESSAGE_CHARS))
    blocks: list[str] = []
    attached: list[dict[str, Any]] = []
    parts: list[ImagePart] = []
    seen: set[str] = set()
    for raw, _start, _end in found:
        if len(attached) >= MAX_ATTACHMENTS:
            break
        pasted = pasted_images.resolve(home, raw)
        if pasted is not None and raw not in seen:
            seen.add(raw)
            info, block, part = _attach_pasted(pasted, images)
            attached.append(info)
            blocks.append(block)
            parts.extend([part] if part is not None else [])
            continue
        target, refusal = _resolve(workspace, raw)
        if refusal is not None and raw not in seen:
            seen.add(raw)
            attached.append({"path": raw, "kind": "file", "refused": "outside the workspace"})
            blocks.append(_refused_block(raw, refusal))
            continue
        if target is None and raw not in seen and _names_a_file(raw):
            seen.add(raw)  # said at send time, not found out from the answer (U2)
            attached.append({"path": raw.rstrip(TRAILING), "kind": "file", "refused": NO_SUCH_FILE})
            blocks.append(_refused_block(raw.rstrip(TRAILING), NO_SUCH_FILE))
            continue
        if target is None or target.rel in seen:
            continue
        seen.add(target.rel)
        info, block, part = _attach(target, budget, redact, images)
        attached.append(info)
        blocks.append(block)
        if part is not None:
            parts.append(part)
    if not attached:
        return Expansion(text)
    return Expansion("\n\n".join([text, *blocks]), tuple(attached), tuple(parts))


def _attach(
    target: paths.Target, budget: _Budget, redact: Callable[[str], str], images: bool
) -> tuple[dict[str, Any], str, ImagePart | None]:
    """One attachment's description, its block for the model and its image, if it is one."""
    stamp = target.final
    rel = target.rel
    if stamp is not None and stamp.is_dir:
        return (*_attach_dir(target, budget), None)
    if stamp is None or not stamp.is_file:
        return (*_refusal(rel, "file", "not a regular file"), None)
    share = budget.share()
    try:
        with os.fdopen(paths.open_file(target), "rb") as handle:
            head = handle.read(BINARY_SNIFF)
            if sniff(head) is not None or os.path.splitext(rel)[1].lower() in IMAGE_EXTENSIONS:
                data = head + handle.read(MAX_SOURCE_BYTES + 1 - len(head))
                return _attach_image(rel, data, images)
            if share < min(MIN_SHARE, stamp.size):  # a scrap of a file helps nobody
                reason = "over the size cap for one message's attachments"
                return (*_refusal(rel, "file", reason), None)
            data = head + handle.read(max(0, share * 4 + 1 - len(head)))
    except (OSError, ToolError) as exc:
        return (*_refusal(rel, "file", f"cannot be read ({exc})"), None)
    return (*_attach_text(rel, stamp.size, data, share, budget, redact), None)


def _attach_pasted(path: Path, images: bool) -> tuple[dict[str, Any], str, ImagePart | None]:
    """A pasted image (a file of the app's own, under its home): attached as an image only."""
    rel = f"{pasted_images.PREFIX}{path.name}"
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        return (*_refusal(rel, "image", f"cannot be read ({exc.strerror})"), None)
    return _attach_image(rel, data, images)


def _attach_image(
    rel: str, data: bytes, images: bool
) -> tuple[dict[str, Any], str, ImagePart | None]:
    """An image file as an image part (scaled to fit), or its refusal in one sentence."""
    if not images:
        return (*_refusal(rel, "image", NO_IMAGES), None)
    try:
        prepared = prepare(data)
    except ImageRefused as exc:
        return (*_refusal(rel, "image", str(exc)), None)
    part = prepared.part(rel)
    info = {
        "path": rel,
        "kind": "image",
        "width": part.width,
        "height": part.height,
        "bytes": part.size,
        "media_type": part.media_type,
    }
    block = (
        f'<attached_image path="{_attr(rel)}" width="{part.width}" height="{part.height}"'
        f' media_type="{part.media_type}"/>'
    )
    return info, block, part


def _attach_text(
    rel: str, size: int, data: bytes, share: int, budget: _Budget, redact: Callable[[str], str]
) -> tuple[dict[str, Any], str]:
    """A text file's description and its block (cut to its share), or why it is refused."""
    if b"\0" in data[:BINARY_SNIFF]:
        return _refusal(rel, "file", "binary file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(data) - 4:  # not merely a character cut by the read's end
            return _refusal(rel, "file", "not UTF-8 text")
        text = data[: exc.start].decode("utf-8")
    full = max(size, len(text))
    shown = cut_at_line_end(text, share)
    budget.spend(len(shown))
    truncated = len(shown) < len(text) or len(data) > share * 4
    lines = shown.count("\n") + (0 if shown.endswith("\n") or not shown else 1)
    body = redact(shown)
    note = (
        f"\n[... cut here: the file is about {full:,} characters, {len(shown):,} shown; "
        "read_file reads the rest]"
        if truncated
        else ""
    )
    info = {
        "path": rel,
        "kind": "file",
        "lines": lines,
        "chars": len(shown),
        "truncated": truncated,
    }
    block = f'<attached_file path="{_attr(rel)}" lines="{lines}">\n{body}{note}\n</attached_file>'
    return info, block


def _attach_dir(target: paths.Target, budget: _Budget) -> tuple[dict[str, Any], str]:
    rel = target.rel
    try:
        fd = paths.open_dir(target)
    except (OSError, ToolError) as exc:
        return _refusal(f"{rel}/", "directory", f"cannot be listed ({exc})")
    try:
        with os.scandir(fd) as scan:
            entries = sorted(
                (entry.name + ("/" if entry.is_dir(follow_symlinks=False) else ""))
                for entry in scan
                if entry.name not in SKIPPED_IN_LISTING
            )
    except OSError as exc:
        return _refusal(f"{rel}/", "directory", f"cannot be listed ({exc.strerror})")
    finally:
        os.close(fd)
    shown = entries[:MAX_DIR_ENTRIES]
    listing = "\n".join(shown)
    if len(entries) > len(shown):
        listing += f"\n[... {len(entries) - len(shown)} more entries]"
    budget.spend(len(listing))
    name = "." if rel == "." else f"{rel}/"
    info = {"path": name, "kind": "directory", "entries": len(entries)}
    opening = f'<attached_directory path="{_attr(name)}" entries="{len(entries)}">'
    block = f"{opening}\n{listing}\n</attached_directory>"
    return info, block


def _refusal(rel: str, kind: str, reason: str) -> tuple[dict[str, Any], str]:
    return {"path": rel, "kind": kind, "refused": reason}, _refused_block(rel, reason)


def _refused_block(rel: str, reason: str) -> str:
    return f'<not_attached path="{_attr(rel)}" reason="{_attr(reason)}"/>'


IMAGE_BLOCK = re.compile(
    r'<attached_image path="([^"]*)" width="(\d+)" height="(\d+)" media_type="([^"]*)"/>'
)
"""The line a message's text carries where an image is attached (written by `_attach_image`)."""


def replace_image_blocks(content: str, shown: Callable[[dict[str, Any]], str]) -> str:
    """`content` with each image's line replaced by `shown(its description)` (an export's
    chip, G4): path, kind, width, height and media type, as the attachment's own."""

    def one(match: re.Match[str]) -> str:
        path = match[1].replace("&quot;", '"').replace("&amp;", "&")
        return shown(
            {
                "path": path,
                "kind": "image",
                "width": int(match[2]),
                "height": int(match[3]),
                "media_type": match[4],
            }
        )

    return IMAGE_BLOCK.sub(one, content)


def _attr(value: str) -> str:
    """A value for a quoted attribute of the blocks above."""
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("\n", " ")

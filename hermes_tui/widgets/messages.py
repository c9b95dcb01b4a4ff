"""Transcript rows: the user's message, the assistant's answer, errors and notices."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from textual.content import Content
from textual.widgets import Static

from hermes_tui.safe_text import safe_name, safe_text

if TYPE_CHECKING:
    from hermes_tui.widgets.answer import AnswerBlock


def chip_label(attachment: Mapping[str, Any]) -> tuple[str, bool]:
    """(the chip's words, attached or not) for one attachment's description (P2)."""
    path = safe_name(str(attachment.get("path") or "?"))
    refused = attachment.get("refused")
    if refused:
        return f"✗ {path} · {safe_name(str(refused))}", False
    if attachment.get("kind") == "image":
        return f"▣ {path} · {_image_shape(attachment)}", True
    if attachment.get("kind") == "directory":
        entries = attachment.get("entries")
        return f"▸ {path} · {entries} entr{'y' if entries == 1 else 'ies'}", True
    lines = attachment.get("lines")
    size = f"{lines} line{'' if lines == 1 else 's'}" if isinstance(lines, int) else "file"
    cut = " (cut)" if attachment.get("truncated") else ""
    return f"▤ {path} · {size}{cut}", True


def image_attachment(ref: Mapping[str, Any]) -> dict[str, Any]:
    """A stored image reference (`ImagePart.ref`) as the attachment its chip describes."""
    return {
        "path": ref.get("name"),
        "kind": "image",
        **{key: ref.get(key) for key in ("width", "height", "bytes")},
    }


def _image_shape(attachment: Mapping[str, Any]) -> str:
    """An image chip's `1280x720 · 214 KB` (G4), from what the agent attached."""
    width, height, size = (attachment.get(k) for k in ("width", "height", "bytes"))
    shape = f"{width}x{height}" if isinstance(width, int) and isinstance(height, int) else "image"
    if not isinstance(size, int):
        return shape
    words = f"{size} B" if size < 1024 else f"{round(size / 1024)} KB"
    return f"{shape} · {words if size < 1024 * 1024 else f'{size / 2**20:.1f} MB'}"


def chips(attachments: Iterable[Mapping[str, Any]], width: int = 0) -> Content:
    """The attachments as compact chips, on as few lines of `width` as fit (0: one line);
    a line breaks between chips, never inside one."""
    lines: list[list[Content]] = [[]]
    used = 0
    for attachment in attachments:
        label, attached = chip_label(attachment)
        chip = Content.styled(f" {label} ", "$text on $panel" if attached else "$text-error")
        size = chip.cell_length + (1 if lines[-1] else 0)
        if width and lines[-1] and used + size > width:
            lines.append([])
            used, size = 0, chip.cell_length
        lines[-1].append(chip)
        used += size
    return Content("\n").join(Content(" ").join(line) for line in lines)


class UserMessage(Static):
    """What the user sent, shown verbatim (never parsed as markup; stored rows are outside
    text, so control characters show as ␛ and the like), its attachments as chips below."""

    def __init__(self, text: str, attachments: Iterable[Mapping[str, Any]] = ()) -> None:
        self.text = safe_text(text)
        self.attachments: list[Mapping[str, Any]] = list(attachments)
        super().__init__(self._content(width=0))

    def _content(self, width: int | None = None) -> Content:
        if not self.attachments:
            return Content(self.text)
        if width is None:
            width = self.content_region.width if self.is_mounted else 0
        return Content("\n").join([Content(self.text), chips(self.attachments, width)])

    def attach(self, attachments: Iterable[Mapping[str, Any]]) -> None:
        """Show what the agent attached for this message's `@path` mentions."""
        self.attachments = list(attachments)
        self.update(self._content())

    def on_resize(self) -> None:
        # The chips are laid out for the width: again when it changes.
        if self.attachments:
            content = self._content()
            if content != self.content:
                self.update(content)


class ErrorBlock(Static):
    """A turn or app error with the text that says what to do."""

    def __init__(self, message: str) -> None:
        self.message = safe_text(message)
        super().__init__(Content(self.message))


class NoticeLine(Static):
    """A one-line notice (retries, command feedback); `level` picks the colour."""

    def __init__(self, text: str, level: str = "info") -> None:
        self.text = safe_text(text)
        super().__init__(Content(self.text), classes=f"-{level}")


def __getattr__(name: str) -> type[AnswerBlock]:
    # AnswerBlock lives in its own module so that Markdown (a heavy import) loads on the
    # first answer, not on the path to the first frame; this keeps the old import working.
    if name == "AnswerBlock":
        from hermes_tui.widgets.answer import AnswerBlock

        return AnswerBlock
    raise AttributeError(name)

"""`◈` markers for typed display rows (D1): shown in the transcript, never sent to a model."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from textual.content import Content
from textual.widgets import Static

from agent.hooks.rows import HOOK_ROW, hook_row_text
from hermes_tui.safe_text import safe_name

MARK = "◈"


def _delegation(metadata: Mapping[str, Any]) -> str:
    count = metadata.get("count")
    if count is None and isinstance(metadata.get("agents"), list):
        count = len(metadata["agents"])
    if isinstance(count, int) and count > 0:
        noun = "agent" if count == 1 else "agents"
        return f"{MARK} {count} background {noun} finished"
    return f"{MARK} background agents finished"


def _model_switch(metadata: Mapping[str, Any]) -> str:
    old, new = metadata.get("from"), metadata.get("to")
    if old and new:
        return f"{MARK} model changed: {old} → {new}"
    return f"{MARK} model changed"


def _landed(label: str) -> Callable[[Mapping[str, Any]], str]:
    """Where a steer or redirect reached the model (T2, T5), with its text on one line."""

    def render(metadata: Mapping[str, Any]) -> str:
        text = " ".join(str(metadata.get("text") or "").split())
        if len(text) > LANDED_TEXT_CHARS:
            text = text[: LANDED_TEXT_CHARS - 1] + "…"
        return f"{MARK} {label}: {text}" if text else f"{MARK} {label}"

    return render


LANDED_TEXT_CHARS = 60


NEW_CACHE = "the next call writes a new prompt cache"
"""After a compaction or a rewind the request's prefix changed: the provider's prompt cache
of the old one no longer applies past the change ($1)."""


def _compaction(metadata: Mapping[str, Any]) -> str:
    """Where compaction happened: the model sees a summary, the user still has every message."""
    count = metadata.get("summarised")
    if isinstance(count, int) and count > 0:
        return f"{MARK} compacted {count} message{'' if count == 1 else 's'} · {NEW_CACHE}"
    return f"{MARK} compacted earlier messages · {NEW_CACHE}"


ERROR_TEXT_CHARS = 120


def _one_line(value: Any, limit: int) -> str:
    text = " ".join(str(value or "").split())
    return text[: limit - 1] + "…" if len(text) > limit else text


def _turn_failed(metadata: Mapping[str, Any]) -> str:
    error = _one_line(metadata.get("error"), ERROR_TEXT_CHARS)
    return f"{MARK} turn failed: {error}" if error else f"{MARK} turn failed"


def _files(count: int) -> str:
    return f"{count} file{'' if count == 1 else 's'}"


def _code(code: Any, *, named: bool = False) -> str:
    """What a restore did to the files, in a few words (`named`: the first files by name)."""
    if not isinstance(code, dict):
        return ""
    restored = code.get("restored_count", len(code.get("restored") or []))
    kept = [str(path) for path in code.get("kept") or []]
    failed = code.get("failed") or []
    parts = [f"{_files(restored)} restored" if restored else "no file restored"]
    names = [str(path) for path in code.get("restored") or []][:3]
    if named and names:
        parts[0] += f" ({', '.join(names)}{' …' if restored > len(names) else ''})"
    if kept:
        shown = ", ".join(kept[:3]) + (" …" if len(kept) > 3 else "")
        parts.append(f"{_files(len(kept))} kept as changed outside ({shown})")
    if failed:
        parts.append(f"{_files(len(failed))} could not be written")
    return "; ".join(parts)


def _rewind(metadata: Mapping[str, Any]) -> str:
    """A rewind: to before which message, what happened to the code and the conversation."""
    text = " ".join(str(metadata.get("message") or "").split())
    if len(text) > LANDED_TEXT_CHARS:
        text = text[: LANDED_TEXT_CHARS - 1] + "…"
    parts = []
    if "code" in metadata:
        parts.append(f"code: {_code(metadata['code'])}")
    if metadata.get("branch"):
        parts.append(f"conversation: later messages kept in branch {metadata['branch']}")
        parts.append(f"{NEW_CACHE} from here")
    detail = f" ({'; '.join(parts)})" if parts else ""
    return f"{MARK} rewound to before “{text}”{detail}"


def _stepped(verb: str) -> Callable[[Mapping[str, Any]], str]:
    """An /undo or /redo: the turn's message, and the files it wrote back by name."""

    def render(metadata: Mapping[str, Any]) -> str:
        text = _one_line(metadata.get("message"), LANDED_TEXT_CHARS)
        turn = f"the turn “{text}”" if text else "the last turn's changes"
        return f"{MARK} {verb} {turn}: {_code(metadata, named=True)}"

    return render


def _fork(metadata: Mapping[str, Any]) -> str:
    source = " ".join(str(metadata.get("from") or "").split())
    return f"{MARK} forked from “{source}”" if source else f"{MARK} forked"


def _instructions(metadata: Mapping[str, Any]) -> str:
    """An instruction file joined (a subdirectory's, on first touch) or was re-read (P1)."""
    joined, directory = metadata.get("joined"), metadata.get("dir")
    if isinstance(joined, str) and joined:
        where = f" (for work under {directory}/)" if isinstance(directory, str) else ""
        return f"{MARK} instructions joined: {joined}{where}"
    parts = [
        _names(metadata.get(key), why)
        for key, why in (("changed", "changed on disk"), ("added", "new"), ("removed", "gone"))
    ]
    parts = [part for part in parts if part]
    if parts:
        return f"{MARK} instructions re-read: {'; '.join(parts)}"
    return f"{MARK} instructions changed"


def _names(names: Any, why: str) -> str:
    """Up to four file names and why they are named ("" for none)."""
    if not isinstance(names, list) or not names:
        return ""
    shown = ", ".join(str(name) for name in names[:4])
    more = f" and {len(names) - 4} more" if len(names) > 4 else ""
    return f"{shown}{more} ({why})"


def _request_failed(metadata: Mapping[str, Any]) -> str:
    """After a failed turn's messages: no model answered them and none is sent again (T7)."""
    count = metadata.get("withheld")
    # A spend cap ($2) sent nothing: nothing failed, the call was held back.
    what = "not sent (spend cap)" if metadata.get("kind") == "spend_cap" else "request failed"
    if isinstance(count, int) and count > 1:
        return f"{MARK} {what}: the {count} messages above are kept, not sent again"
    return f"{MARK} {what}: the message above is kept, not sent again"


_RENDERERS: dict[str, Callable[[Mapping[str, Any]], str | None]] = {
    "rewind": _rewind,
    "undo": _stepped("undid"),
    "redo": _stepped("redid"),
    "fork": _fork,
    "steer": _landed("steered"),
    "redirect": _landed("redirected"),
    "model_switch": lambda metadata: _model_switch(metadata),
    "async_delegation_complete": _delegation,
    "compaction": _compaction,
    "instructions": _instructions,
    "request_failed": _request_failed,
    "turn_failed": _turn_failed,
    "turn_stopped": lambda _metadata: "■ stopped",
    HOOK_ROW: hook_row_text,  # a user hook's run (N4)
    "hidden": lambda _metadata: None,
}


def marker_text(kind: str, metadata: Mapping[str, Any] | None) -> str | None:
    """The line a display row renders as, or None for rows that never render."""
    render = _RENDERERS.get(kind)
    if render is None:
        return f"{MARK} {kind.replace('_', ' ')}"
    return render(metadata or {})


class Marker(Static):
    """One display-row marker line."""

    def __init__(self, kind: str, text: str) -> None:
        # A marker is one line; the paths and names in it show their newlines (H1).
        self.text = safe_name(text)
        super().__init__(Content(self.text))
        self.kind = kind

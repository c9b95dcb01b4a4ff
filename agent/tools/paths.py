"""Workspace confinement: every path a tool touches must resolve inside the workspace."""

from __future__ import annotations

from pathlib import Path

from agent.tools.registry import ToolError


def resolve_in_workspace(workspace: Path, raw: str, *, default: str | None = None) -> Path:
    """Resolve `raw` (relative to `workspace`, or absolute), following symlinks.

    Raises ToolError if the result lies outside the workspace or the path is unusable.
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        if default is None:
            raise ToolError("The path argument is empty; give a file path.")
        raw = default
    ws = Path(workspace).resolve()
    try:
        candidate = Path(raw).expanduser()
        if not candidate.is_absolute():
            candidate = ws / candidate
        resolved = candidate.resolve()
    except (ValueError, RuntimeError, OSError) as exc:
        raise ToolError(f"Invalid path {raw!r}: {exc}.") from None
    if not is_inside(ws, resolved):
        raise ToolError(f"Refused: {raw} is outside the workspace {ws}.")
    return resolved


def is_inside(workspace: Path, path: Path) -> bool:
    """True if the already-resolved `path` is the workspace or lies under it."""
    return path == workspace or path.is_relative_to(workspace)


def display(workspace: Path, path: Path) -> str:
    """`path` relative to the workspace, in POSIX form ("." for the workspace itself)."""
    try:
        rel = path.relative_to(workspace)
    except ValueError:
        return str(path)
    text = rel.as_posix()
    return text if text else "."

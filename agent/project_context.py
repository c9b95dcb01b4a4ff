"""The agent's side of the project's own context (SPEC P1, P2): instruction files in the
system prompt, subdirectory files joining on first touch, and `@path` mentions attached to
the user's message, each shown to the user as a typed event or display row (D1)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agent import events as ev
from agent.attachments import ATTACHMENTS_KEY, SHOWN_KEY, expand
from agent.instructions import InstructionFile, Instructions
from agent.messages import ImagePart, Message, ToolCall
from agent.models import CHARS_PER_TOKEN, DEFAULT_CONTEXT_WINDOW

INSTRUCTIONS_ROW = "instructions"
"""The display kind of a row saying a subdirectory's file joined or a file was re-read."""
ATTACH_SHARE_OF_WINDOW = 4
"""A message's attachments take at most a quarter of the model's context window."""


class ProjectContext:
    """Instruction files and mentions for one agent; `append` keeps a display row (D1)."""

    def __init__(
        self,
        workspace: Path,
        home: Path | None,
        sink: Callable[[ev.AgentEvent], None],
        append: Callable[[Message], None],
    ) -> None:
        self.instructions = Instructions(workspace, home)
        self.workspace = self.instructions.workspace
        self._sink = sink
        self._append = append

    @property
    def files(self) -> tuple[InstructionFile, ...]:
        """The instruction files in effect, in prompt order."""
        return self.instructions.files

    def system(self, base: str) -> str:
        """The system prompt: `base`, then the instruction files (stable between changes)."""
        section = self.instructions.prompt_section()
        return f"{base}\n\n{section}" if section else base

    # -- instruction files -------------------------------------------------------------------
    def refresh(self, *, in_session: bool) -> None:
        """Read the files again (a session starts, or a turn does); say what changed."""
        found = self.instructions.refresh()
        for notice in found.notices:
            self._sink(ev.Notice(notice, "warning"))
        if found.any and in_session:
            what = {"changed": found.changed, "added": found.added, "removed": found.removed}
            self._row({key: list(names) for key, names in what.items() if names})

    def touched(self, calls: Iterable[ToolCall]) -> None:
        """Tools touched these calls' paths: a subdirectory's file joins, once a session."""
        for call in calls:
            try:
                path = call.parsed_arguments().get("path")
            except ValueError:
                continue
            if not isinstance(path, str):
                continue
            for joined in self.instructions.touch(path):
                directory = joined.path.parent.relative_to(self.workspace).as_posix()
                self._row({"joined": joined.shown, "dir": directory})
        for notice in self.instructions.take_notices():
            self._sink(ev.Notice(notice, "warning"))

    def attach_rows(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """A stored session: the subdirectory files it had joined join again."""
        joined = [
            row["display_metadata"]["dir"]
            for row in rows
            if row.get("display_kind") == INSTRUCTIONS_ROW
            and isinstance(row.get("display_metadata"), dict)
            and isinstance(row["display_metadata"].get("dir"), str)
        ]
        if joined:
            self.instructions.rejoin(joined)
        else:
            self.instructions.forget_joined()

    def new_session(self) -> None:
        """Subdirectory files join again when first touched in the next session."""
        self.instructions.forget_joined()

    def _row(self, metadata: dict[str, Any]) -> None:
        self._append(Message("assistant", display_kind=INSTRUCTIONS_ROW, display_metadata=metadata))
        self._sink(ev.DisplayRow(INSTRUCTIONS_ROW, metadata))

    # -- the user's message ------------------------------------------------------------------
    def user_message(
        self,
        text: str,
        *,
        shown: str | None,
        metadata: dict[str, Any] | None,
        redact: Callable[[str], str],
        window: int | None,
        images: bool = True,
    ) -> tuple[Message, tuple[dict[str, Any], ...]]:
        """The user message the model reads (mentions attached, images among them unless
        `images` is False) and what was attached.

        What the user typed is kept in the row where the model reads something else, so
        the transcript shows the typed line and the attachments as chips (D3).
        """
        meta = dict(metadata or {})
        attachments: tuple[dict[str, Any], ...] = ()
        parts: tuple[ImagePart, ...] = ()
        content = text
        if not meta:  # a typed note (the recovery note) is our text: nothing to attach
            # An unknown window caps as compaction measures it: the small assumed one.
            budget = (window or DEFAULT_CONTEXT_WINDOW) * CHARS_PER_TOKEN // ATTACH_SHARE_OF_WINDOW
            expansion = expand(
                text,
                self.workspace,
                redact=redact,
                budget_chars=budget,
                images=images,
                home=self.instructions.home,
            )
            content, attachments, parts = expansion.content, expansion.attachments, expansion.images
        if attachments:
            meta[ATTACHMENTS_KEY] = list(attachments)
        typed = text if shown is None else shown
        if typed != content:
            meta[SHOWN_KEY] = typed
        message = Message("user", content, display_metadata=meta or None, images=list(parts))
        return message, attachments

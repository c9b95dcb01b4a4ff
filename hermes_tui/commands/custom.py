"""Custom command files as slash commands: a `CommandSource` for the command table (P3).

The files are read again when one changes (a few stats, at most twice a second), so a
command written while the app runs is there at the next keystroke. A file that cannot be
used is skipped and said once, naming it, until it changes.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from textual import events

from agent.custom_commands import PROJECT_DIR, CustomCommand, command_dirs, load_commands
from hermes_tui.commands.context import CommandContext
from hermes_tui.commands.registry import CommandTable, SlashCommand, split
from hermes_tui.turns import Prompt

RESCAN_SECONDS = 0.5
"""The files are looked at again at most this often."""


def prompt_for(custom: CustomCommand, name: str, argument: str) -> Prompt:
    """The turn a custom command runs: its prompt, shown as the line the user typed."""
    return Prompt(custom.prompt(argument), f"/{name} {argument}".rstrip(), custom.model)


class CustomCommandSource:
    """The project's and the user's command files, as slash commands."""

    def __init__(
        self,
        workspace: Path,
        home: Path | None,
        *,
        on_skipped: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.workspace = workspace
        self.home = home
        self.on_skipped = on_skipped
        self._clock = clock
        self._checked = float("-inf")
        self._signature: tuple[tuple[str, int, int], ...] = ()
        self._entries: list[SlashCommand] = []
        self._by_name: dict[str, CustomCommand] = {}
        self._told: set[str] = set()
        self._lock = threading.Lock()

    def commands(self) -> Sequence[SlashCommand]:
        """The command files as slash commands, read again if one changed."""
        with self._lock:
            now = self._clock()
            if now - self._checked >= RESCAN_SECONDS:
                self._checked = now
                signature = self._stat()
                if signature != self._signature:
                    self._signature = signature
                    self._load()
            return self._entries

    def custom(self, qualified: str) -> CustomCommand | None:
        """The command file behind `origin:name`."""
        return self._by_name.get(qualified)

    def _stat(self) -> tuple[tuple[str, int, int], ...]:
        """What the folders and their files are now: names, sizes and times."""
        seen = []
        for _origin, directory in command_dirs(self.workspace, self.home):
            try:
                with os.scandir(directory) as scan:
                    for entry in scan:
                        if entry.name.endswith(".md"):
                            st = entry.stat(follow_symlinks=False)
                            seen.append((entry.path, st.st_size, st.st_mtime_ns))
            except OSError:
                continue
        return tuple(sorted(seen))

    def _load(self) -> None:
        loaded = load_commands(self.workspace, self.home)
        self._entries = [self._entry(custom) for custom in loaded.commands]
        self._by_name = {f"{c.origin}:{c.name}": c for c in loaded.commands}
        for sentence in loaded.skipped:
            if sentence not in self._told and self.on_skipped is not None:
                self.on_skipped(sentence)
        self._told = set(loaded.skipped)

    def _entry(self, custom: CustomCommand) -> SlashCommand:
        qualified = f"{custom.origin}:{custom.name}"

        async def run(ctx: CommandContext, argument: str) -> None:
            """Run the command file's prompt as a turn (queued while one runs)."""
            current = self.custom(qualified)
            if current is None:
                await ctx.notice(f"The command file of /{qualified} is gone.", "error")
                return
            name = next(
                (e.name for e in ctx.command_table.entries() if e.qualified == qualified),
                qualified,
            )
            await ctx.turns.send_prompt(prompt_for(current, name, argument))

        description = custom.description or f"prompt from {custom.path.name}"
        hint = custom.argument_hint or ("[arguments]" if "$" in custom.body else "")
        return SlashCommand(custom.name, hint, description, run, origin=custom.origin)


COMMAND_LINE = re.compile(r"^/[A-Za-z0-9][A-Za-z0-9_:-]*(\s|$)")
"""A line that names a command (`/usr/bin/x is broken` does not: it is text)."""


def prompt_for_line(
    line: str, workspace: Path, home: Path | None, on_skipped: Callable[[str], None]
) -> Prompt | None:
    """The custom command a headless `run "/name args"` runs (None: the line is text).

    Raises LookupError with the sentence for a name that is no custom command.
    """
    if not COMMAND_LINE.match(line.strip()):
        return None
    source = CustomCommandSource(workspace, home, on_skipped=on_skipped)
    table = CommandTable()
    table.add_source(source)
    name, argument = split(line)
    entry = table.lookup(name)
    if entry is None:
        raise LookupError(
            f"Unknown command /{name}: `run` runs custom commands, the .md files in "
            f"{PROJECT_DIR}/ and {Path(home or '~') / 'commands'}/."
        )
    custom = source.custom(entry.qualified) if entry.origin else None
    if custom is None:
        raise LookupError(
            f"/{name} is a command of the full-screen app; `run` runs custom commands only."
        )
    return prompt_for(custom, entry.name, argument)


def custom_table(app: Any) -> CommandTable:
    """The app's command table: the built-ins, then the project's and the user's files."""

    def skipped(sentence: str) -> None:
        # Said from whichever thread read the files: through the app's queue.
        app.post_message(events.Callback(callback=partial(app.notice, sentence, "warning")))

    table = CommandTable()
    table.add_source(CustomCommandSource(app.workspace, app.config.home, on_skipped=skipped))
    return table

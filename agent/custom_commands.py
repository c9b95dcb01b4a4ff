"""Custom slash commands: Markdown prompt files (SPEC P3).

`.hermes-tui/commands/NAME.md` in the workspace (project) and `$HERMES_TUI_HOME/commands/
NAME.md` (user) become `/NAME`. Optional YAML front matter between `---` lines sets
`description`, `argument-hint` and `model` (provider:model for that command's turn); the
body is the prompt, with `$ARGUMENTS` (everything after the name) and `$1`, `$2`, ... (its
words, shell-quoted) put in. A body that uses neither gets the arguments appended. `@path`
mentions in the body are attached like the composer's. A file that cannot be used (bad front
matter, not text, too big, a name that is not a command name) is skipped with a sentence
naming it; the other files still load.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from agent.prompt_files import BrokenFile, read_prompt_file, split_front_matter

PROJECT_DIR = Path(".hermes-tui") / "commands"
USER_DIR = "commands"
MAX_FILES = 200
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
FRONT_KEYS = ("description", "argument-hint", "model")
_ARGUMENT = re.compile(r"\$(ARGUMENTS|\d{1,2})")


@dataclass(frozen=True)
class CustomCommand:
    """One command file: its name, where it comes from, what it says about itself, its body."""

    name: str
    origin: str
    """project | user"""
    path: Path
    body: str
    description: str = ""
    argument_hint: str = ""
    model: str | None = None

    def prompt(self, arguments: str) -> str:
        """The body with `$ARGUMENTS`, `$1`, `$2`... replaced (unused: arguments appended)."""
        words = _words(arguments)

        def value(match: re.Match[str]) -> str:
            key = match.group(1)
            if key == "ARGUMENTS":
                return arguments
            index = int(key) - 1
            return words[index] if 0 <= index < len(words) else ""

        text, used = _ARGUMENT.subn(value, self.body)
        if not used and arguments:
            text = f"{text.rstrip()}\n\nARGUMENTS: {arguments}"
        return text.strip()


def _words(arguments: str) -> list[str]:
    """The arguments as words, quotes honoured; an unbalanced quote splits on spaces."""
    try:
        return shlex.split(arguments)
    except ValueError:
        return arguments.split()


BrokenCommand = BrokenFile
"""A command file that cannot be used; the message says why."""


def read_command(path: Path, origin: str) -> CustomCommand:
    """One command file; raises BrokenCommand saying why it cannot be a command."""
    name = path.stem.lower()
    if not NAME.match(name):
        raise BrokenCommand(
            "its name is not a command name (letters, digits, - and _, starting with a "
            "letter or digit)"
        )
    front, body = split_front_matter(read_prompt_file(path), FRONT_KEYS)
    if not body.strip():
        raise BrokenCommand("it has no prompt after the front matter")
    return CustomCommand(
        name=name,
        origin=origin,
        path=path,
        body=body,
        description=" ".join(front.get("description", "").split()),
        argument_hint=" ".join(front.get("argument-hint", "").split()),
        model=front.get("model"),
    )


@dataclass(frozen=True)
class Loaded:
    """The commands of every directory, and a sentence for each file that was skipped."""

    commands: tuple[CustomCommand, ...]
    skipped: tuple[str, ...]


def command_dirs(workspace: Path, home: Path | None) -> list[tuple[str, Path]]:
    """(origin, directory) in the order their commands win a shared name."""
    dirs = [("project", Path(workspace) / PROJECT_DIR)]
    if home is not None:
        dirs.append(("user", Path(home) / USER_DIR))
    return dirs


def load_commands(workspace: Path, home: Path | None) -> Loaded:
    """Every command file of the project's and the user's command folders."""
    commands: list[CustomCommand] = []
    skipped: list[str] = []
    for origin, directory in command_dirs(workspace, home):
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in [n for n in names if n.endswith(".md")][:MAX_FILES]:
            path = directory / name
            try:
                commands.append(read_command(path, origin))
            except BrokenCommand as exc:
                skipped.append(f"Skipped the {origin} command file {shown_path(path)}: {exc}.")
    return Loaded(tuple(commands), tuple(skipped))


def shown_path(path: Path) -> str:
    """A command file's path as the user reads it (`~/…` under the home directory)."""
    home = Path.home()
    if path.is_absolute() and path.is_relative_to(home):
        return "~/" + path.relative_to(home).as_posix()
    cwd = Path.cwd()
    if path.is_absolute() and path.is_relative_to(cwd):
        return path.relative_to(cwd).as_posix()
    return str(path)


def find(commands: tuple[CustomCommand, ...], name: str) -> CustomCommand | None:
    """The command `/name` runs: `origin:name`, or the first of that name (project first)."""
    origin, _, plain = name.rpartition(":")
    for entry in commands:
        if entry.name == plain and (not origin or entry.origin == origin):
            return entry
    return None

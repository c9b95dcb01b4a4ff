"""Subagent types: what a `task` call may hand its job to (G1).

`.hermes-tui/agents/NAME.md` in the workspace (project) and `$HERMES_TUI_HOME/agents/NAME.md`
(user) are agent types, read as custom commands are (agent/prompt_files.py): an optional
front matter sets `description`, `tools` (the tool names it may use; default: the read-only
ones) and `model` (provider:model); the body is the subagent's system prompt. A project
type wins over a user type of the same name, and either over the built-in `explore`. A file
that cannot be used is skipped with one sentence naming it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from agent.prompt_files import BrokenFile, read_prompt_file, split_front_matter

PROJECT_DIR = Path(".hermes-tui") / "agents"
USER_DIR = "agents"
MAX_FILES = 50
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
FRONT_KEYS = ("description", "tools", "model")
READ_ONLY_TOOLS = ("read_file", "list_dir", "glob", "grep")
"""The tools a type gets when it names none: it reads and searches, and changes nothing."""
SUBAGENT_TOOL = "task"
"""The tool that starts a subagent: a subagent's registry never has it (a depth of 1)."""
NEVER = frozenset({SUBAGENT_TOOL})

EXPLORE_PROMPT = (
    "You are an explore subagent: you search and read the user's repository to answer "
    "one self-contained question for the agent that called you. Use glob and grep to find "
    "what matters, read only the parts you need, and change nothing. Your last message is "
    "all the caller sees: make it a short, exact report (file paths with line numbers, "
    "names, what you found and what you did not), not a narration of your steps."
)


@dataclass(frozen=True)
class AgentType:
    """One kind of subagent: its name, where it comes from, its tools, model and prompt."""

    name: str
    origin: str
    """built-in | project | user"""
    prompt: str
    description: str = ""
    tools: tuple[str, ...] = READ_ONLY_TOOLS
    model: str | None = None
    path: Path | None = None

    @property
    def read_only(self) -> bool:
        """True when every tool it may use only reads: such subagents may run side by side."""
        return set(self.tools) <= set(READ_ONLY_TOOLS)


EXPLORE = AgentType(
    name="explore",
    origin="built-in",
    prompt=EXPLORE_PROMPT,
    description="Searches and reads the repository to answer a question; changes nothing.",
)


@dataclass(frozen=True)
class LoadedTypes:
    """The agent types of every folder (built-in last), and a sentence per skipped file."""

    types: tuple[AgentType, ...]
    skipped: tuple[str, ...]

    def find(self, name: str) -> AgentType | None:
        """The type called `name` (project first, then user, then built-in), or None."""
        return next((kind for kind in self.types if kind.name == name), None)

    @property
    def names(self) -> list[str]:
        """Each usable name once, in the order `find` prefers."""
        return list(dict.fromkeys(kind.name for kind in self.types))


def read_agent_type(path: Path, origin: str) -> AgentType:
    """One agent type file; raises BrokenFile saying why it cannot be one."""
    name = path.stem.lower()
    if not NAME.match(name):
        raise BrokenFile(
            "its name is not an agent type name (letters, digits, - and _, starting with a "
            "letter or digit)"
        )
    front, body = split_front_matter(read_prompt_file(path), FRONT_KEYS, lists=("tools",))
    if not body.strip():
        raise BrokenFile("it has no system prompt after the front matter")
    tools = front.get("tools") or READ_ONLY_TOOLS
    refused = sorted(set(tools) & NEVER)
    if refused:
        raise BrokenFile(f"`tools` names {', '.join(refused)}, which a subagent may not use")
    return AgentType(
        name=name,
        origin=origin,
        prompt=body.strip(),
        description=" ".join(front.get("description", "").split()),
        tools=tuple(dict.fromkeys(tools)),
        model=front.get("model"),
        path=path,
    )


def load_agent_types(workspace: Path, home: Path | None) -> LoadedTypes:
    """Every agent type of the project's and the user's folders, then the built-in one."""
    from agent.custom_commands import shown_path

    found: list[AgentType] = []
    skipped: list[str] = []
    folders = [("project", Path(workspace) / PROJECT_DIR)]
    if home is not None:
        folders.append(("user", Path(home) / USER_DIR))
    for origin, folder in folders:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in [n for n in names if n.endswith(".md")][:MAX_FILES]:
            path = folder / name
            try:
                found.append(read_agent_type(path, origin))
            except BrokenFile as exc:
                skipped.append(f"Skipped the {origin} agent type file {shown_path(path)}: {exc}.")
    return LoadedTypes((*found, EXPLORE), tuple(skipped))

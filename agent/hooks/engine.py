"""`Hooks`: the hooks of one workspace (config.yaml's, and the project's once allowed), run
for an event, each run shown as a row, their answers combined for the turn (N4).

Hooks of an event run one after another in their order (config.yaml's first), each bounded
by its timeout and the turn's stop; a "no" (deny, block, exit 2) ends the event's run, since
nothing after it can change the outcome. Before a tool: any deny wins, then ask, then allow.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.hooks.answers import Decision, HookAnswer, answer_of, first_line
from agent.hooks.process import run_command
from agent.hooks.project import (
    PROJECT_FILE,
    HookConsent,
    HookConsentError,
    ProjectHooks,
    read_project_hooks,
)
from agent.hooks.settings import TOOL_EVENTS, HookSettings, HookSpec

if TYPE_CHECKING:
    from agent.config import Config
    from agent.tools.permissions import Permissions

log = logging.getLogger("hermes_tui.hooks")

CONFIG = "config"
PROJECT = "project"
CONTEXT_CAP = 16_000
"""Characters of one hook's text the model gets (its stdout is capped at 64 KB before)."""
_INTERPRETERS = frozenset({"sh", "bash", "zsh", "python", "python3", "node", "uv", "npx", "env"})

ShowRow = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class HookEnv:
    """What one event's runs need from the turn: the session, the keys to withhold, the stop
    flag, and where each run's row goes."""

    session_id: str | None
    show: ShowRow
    hidden_env: Collection[str] = ()
    cancel: threading.Event | None = None


@dataclass
class HookOutcome:
    """What an event's hooks said together: the decision, who said it and why, and the text
    the model gets (each hook's, headed by its name)."""

    decision: Decision = Decision.NONE
    by: str = ""
    reason: str = ""
    context: list[str] = field(default_factory=list)


def hook_name(spec: HookSpec) -> str:
    """What the hook's rows call it: its `name`, else its command's first word that is not
    an interpreter or a variable (`python3 check.py` is `check.py`)."""
    if spec.name:
        return spec.name
    try:
        words = shlex.split(spec.command)
    except ValueError:
        words = spec.command.split()
    for word in words:
        base = os.path.basename(word)
        if "=" in word or base in _INTERPRETERS or word.startswith("-"):
            continue
        return base or word
    return os.path.basename(words[0]) if words else "hook"


def matches(pattern: str, tool: str) -> bool:
    """True when `tool` matches `pattern`: fnmatch patterns, `|` between alternatives
    (`write_file|edit_file`, the shape of Claude Code's matchers)."""
    return any(fnmatchcase(tool, part.strip()) for part in pattern.split("|") if part.strip())


class Hooks:
    """The hooks in effect in one workspace; `run` blocks its caller (the turn's thread)."""

    def __init__(self, settings: HookSettings, workspace: Path, home: Path | None) -> None:
        self.settings = settings
        self.workspace = Path(workspace)
        self.project: ProjectHooks = read_project_hooks(self.workspace)
        self.consent = HookConsent(home, self.workspace) if home is not None else None
        self._told = False
        self._started: set[str] = set()

    @property
    def turn_end_limit(self) -> int:
        """How many times turn_end hooks may send the agent back in one turn."""
        return self.settings.turn_end_limit

    @property
    def project_allowed(self) -> bool:
        """True when the project's hooks may run (the user allowed exactly these)."""
        return self.consent is not None and self.consent.allowed(self.project)

    def allow_project(self) -> str:
        """The user's consent to the project's hooks as they are now; a sentence for them."""
        if not self.project.listed:
            return self.project.problem or f"This project has no hooks ({self.project.path})."
        if self.consent is None:
            return "Not saved: this session has no home to keep the consent in."
        try:
            self.consent.allow(self.project)
        except HookConsentError as exc:
            return str(exc)
        count = len(self.project.listed)
        where = self.project.path
        return f"Allowed this project's {count} hook(s) from {where}; they run from now on."

    def unconsented_notice(self) -> str | None:
        """Once per workspace: the sentence saying the project's hooks do not run, and why."""
        if self._told:
            return None
        self._told = True
        if self.project.problem:
            return self.project.problem + "."
        if not self.project.listed or self.project_allowed:
            return None
        commands = "; ".join(f"{event}: {spec.command}" for event, spec in self.project.listed)
        return (
            f"This project's {PROJECT_FILE} defines hooks you have not allowed "
            f"({commands}). They do not run; /hooks allow runs them (asked again if they "
            "change)."
        )

    def hooks_for(self, event: str, tool: str | None = None) -> list[tuple[str, HookSpec]]:
        """The hooks that run on `event` (for `tool`, on a tool event), with their origin."""
        found = [(CONFIG, spec) for spec in self.settings.of(event)]
        if self.project.listed and self.project_allowed:
            found += [(PROJECT, spec) for spec in self.project.settings.of(event)]
        if event in TOOL_EVENTS:
            found = [(o, spec) for o, spec in found if matches(spec.match, tool or "")]
        return found

    def first_in_session(self, session_id: str | None) -> bool:
        """True the first time a session asks in this process (its session_start hooks run)."""
        key = session_id or ""
        if key in self._started:
            return False
        self._started.add(key)
        return True

    def run(
        self, event: str, data: dict[str, Any], env: HookEnv, *, tool: str | None = None
    ) -> HookOutcome:
        """Run `event`'s hooks with `data` on stdin; each run becomes a row through `env.show`."""
        outcome = HookOutcome()
        for origin, spec in self.hooks_for(event, tool):
            if env.cancel is not None and env.cancel.is_set():
                break
            name = hook_name(spec)
            answer = self._run_one(spec, event, data, env)
            env.show(_row(event, name, origin, answer))
            if answer.error:
                log.warning("hook %s (%s) %s", name, event, answer.error)
                continue
            if answer.context:
                outcome.context.append(f"[{event} hook {name}]\n{answer.context[:CONTEXT_CAP]}")
            if answer.decision == Decision.DENY:
                outcome.decision, outcome.by, outcome.reason = Decision.DENY, name, answer.reason
                break
            if answer.decision == Decision.ASK or (
                answer.decision == Decision.ALLOW and outcome.decision == Decision.NONE
            ):
                outcome.decision, outcome.by, outcome.reason = answer.decision, name, answer.reason
        return outcome

    def _run_one(
        self, spec: HookSpec, event: str, data: dict[str, Any], env: HookEnv
    ) -> HookAnswer:
        payload = {
            "event": event,
            "session_id": env.session_id,
            "cwd": str(self.workspace),
            **data,
        }
        stdin = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
        run = run_command(
            spec.command,
            stdin,
            cwd=self.workspace,
            timeout=spec.timeout,
            hidden_env=env.hidden_env,
            extra_env={
                "HERMES_TUI_HOOK_EVENT": event,
                "HERMES_TUI_PROJECT_DIR": str(self.workspace),
            },
            cancel=env.cancel,
        )
        return answer_of(run, event, spec.timeout)


_SAID_NO = {
    "before_tool": "denied",
    "prompt": "blocked the message",
    "turn_end": "sent the agent back",
    "after_tool": "reported",
    "session_start": "objected",
}


def _row(event: str, name: str, origin: str, answer: HookAnswer) -> dict[str, Any]:
    """The display row's metadata for one run."""
    if answer.error:
        outcome, summary = "error", answer.error
    elif answer.decision == Decision.DENY:
        outcome = "denied"
        summary = _SAID_NO.get(event, "said no") + (
            f": {first_line(answer.reason)}" if answer.reason else ""
        )
    elif answer.decision == Decision.ALLOW:
        outcome, summary = (
            "allowed",
            "allowed" + (f": {first_line(answer.reason)}" if answer.reason else ""),
        )
    elif answer.decision == Decision.ASK:
        outcome, summary = "asked", "asks the user"
    else:
        outcome = "ok"
        summary = first_line(answer.message) or first_line(answer.context) or "ok"
    return {"event": event, "name": name, "origin": origin, "outcome": outcome, "summary": summary}


def workspace_rules(config: Config, workspace: Path) -> tuple[Permissions, Hooks]:
    """What the user set for tool calls in `workspace`: the permission rules (config.yaml's
    and the project's, N3) and the hooks (config.yaml's, and the project's once allowed, N4)."""
    from agent.tools.permissions import permissions_for

    return permissions_for(config, workspace), Hooks(config.hooks, workspace, config.home)

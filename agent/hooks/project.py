"""A project's hooks (`.hermes-tui/hooks.yaml`) and the user's one-time consent to them (N4).

The file comes with the repository, so it is outside input: a problem in it is one sentence
and its hooks do not run (the app still starts). Its hooks run only after the user allowed
exactly the commands it lists now: the consent is a digest of every hook (event, match,
command), kept in the app's home beside the project's permission rules, never in the
repository (a repository that could write it could consent for the user); a changed list asks
again. Its `turn_end_limit` is not read: how often the agent is sent back is the user's call.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.hooks.settings import EVENTS, HookSettings, HookSpec

PROJECT_FILE = Path(".hermes-tui") / "hooks.yaml"
CONSENT_FILE = "hooks-consent.yaml"


class HookConsentError(Exception):
    """The consent could not be saved; the sentence says why."""


@dataclass(frozen=True)
class ProjectHooks:
    """What a workspace's hooks file says: its hooks, or the sentence saying why none are read."""

    path: Path
    settings: HookSettings = field(default_factory=HookSettings)
    problem: str = ""

    @property
    def listed(self) -> list[tuple[str, HookSpec]]:
        """Every hook of the file with its event, in the file's order of events."""
        return [(event, spec) for event in EVENTS for spec in self.settings.of(event)]

    @property
    def fingerprint(self) -> str:
        """A digest of what would run: consent is for exactly this."""
        rows = [[event, spec.match, spec.command] for event, spec in self.listed]
        return hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def read_project_hooks(workspace: Path) -> ProjectHooks:
    """The workspace's `.hermes-tui/hooks.yaml` (no hooks when it is missing or broken)."""
    from agent.config_check import checked
    from agent.config_source import ConfigError, read_yaml

    path = Path(workspace) / PROJECT_FILE
    try:
        data: Any = read_yaml(path)
        if set(data) == {"hooks"}:
            data = data["hooks"] or {}
        found = checked(HookSettings, data, path=path)
    except ConfigError as exc:
        return ProjectHooks(
            path, problem=f"{str(exc).rstrip('.')}; this project's hooks do not run"
        )
    return ProjectHooks(path, found)


class HookConsent:
    """The user's consent to one workspace's project hooks; safe to use from any thread."""

    def __init__(self, home: Path, workspace: Path) -> None:
        from agent.tools.permissions import project_rules_path

        self.path = project_rules_path(home, workspace).parent / CONSENT_FILE
        self._workspace = str(Path(workspace).resolve())
        self._lock = threading.Lock()

    def allowed(self, hooks: ProjectHooks) -> bool:
        """True when the user allowed exactly these hooks."""
        from agent.yaml_mapping import read_mapping

        with self._lock:
            data, _problem = read_mapping(self.path)
        return bool(hooks.listed) and data.get("allowed") == hooks.fingerprint

    def allow(self, hooks: ProjectHooks) -> None:
        """Remember the consent to these hooks (HookConsentError when it cannot be saved)."""
        import yaml

        from storage.files import atomic_write, private_dir

        data = {
            "workspace": self._workspace,
            "allowed": hooks.fingerprint,
            "commands": [f"{event}: {spec.command}" for event, spec in hooks.listed],
        }
        with self._lock:
            private_dir(self.path.parent)
            try:
                atomic_write(self.path, yaml.safe_dump(data, sort_keys=True, allow_unicode=True))
            except OSError as exc:
                raise HookConsentError(
                    f"Not saved: {self.path} cannot be written ({exc.strerror})."
                ) from None

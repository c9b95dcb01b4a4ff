"""The permission rules in effect in one workspace: config.yaml's and this project's (N3).

A project's rules live in the app's home, `projects/<hash of the workspace>/permissions.yaml`,
never in the repository: a repository that could write them could allow itself anything.
The approval dialog's "always for `pytest *` in this project" adds to the file's `allow`
list; the file is re-read before it is rewritten (another window may have added a rule) and
written atomically, private to the user.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.tools.rules import Call, Decision, PlacedRule, RuleProblem, decide, parse_rule

if TYPE_CHECKING:
    from agent.config import Config

log = logging.getLogger("hermes_tui.permissions")

CONFIG = "config"
PROJECT = "project"
FILE_NAME = "permissions.yaml"


class PermissionsError(Exception):
    """The project's rules could not be saved; the sentence says why."""


def project_rules_path(home: Path, workspace: Path) -> Path:
    """Where the rules of `workspace` are kept under the app's home."""
    real = os.path.realpath(Path(workspace).expanduser())
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return Path(home) / "projects" / digest / FILE_NAME


def permissions_for(config: Config, workspace: Path) -> Permissions:
    """config.yaml's permission rules and `workspace`'s project rules (N3)."""
    return Permissions(config.permissions.lists(), home=config.home, workspace=workspace)


class Permissions:
    """config.yaml's rules and the project's; safe to use from any thread."""

    def __init__(
        self,
        configured: Mapping[str, tuple[str, ...]] | None = None,
        *,
        home: Path | None = None,
        workspace: Path | None = None,
    ) -> None:
        # config.yaml's rules were checked when it was read: a bad one never gets here.
        self._configured = [
            PlacedRule(parse_rule(text), decision, CONFIG)
            for decision in Decision
            for text in (configured or {}).get(decision, ())
        ]
        self._path = project_rules_path(home, workspace) if home and workspace else None
        self._workspace = str(Path(workspace).resolve()) if workspace else ""
        self._lock = threading.Lock()
        self._project: list[PlacedRule] = []
        self.problem = ""
        """Why the project's file was not read (it is then left alone), or ""."""
        self._project = self._read_project()

    @property
    def project_path(self) -> Path | None:
        """The file this project's rules are kept in (None without a home and a workspace)."""
        return self._path

    @property
    def stores_project_rules(self) -> bool:
        """True when "always for this project" can be saved (a home and a workspace)."""
        return self._path is not None

    def rules(self) -> list[PlacedRule]:
        """Every rule in effect: config.yaml's, then the project's."""
        with self._lock:
            return [*self._configured, *self._project]

    def decide(self, call: Call) -> PlacedRule | None:
        """The rule that decides `call` (deny over ask over allow), or None."""
        return decide(self.rules(), call)

    def allow_in_project(self, text: str) -> None:
        """Add `text` to this project's allow list (PermissionsError when it cannot be saved)."""
        rule = parse_rule(text)
        if self._path is None:
            raise PermissionsError("Not saved: this session has no project to keep rules for.")
        with self._lock:
            data = self._load()
            if self.problem:
                raise PermissionsError(f"Not saved: {self.problem}.")
            allowed = [str(item) for item in data.get("allow") or [] if isinstance(item, str)]
            if rule.text not in allowed:
                allowed.append(rule.text)
            data["allow"] = allowed
            data["workspace"] = self._workspace
            self._write(data)
            self._project = self._placed(data)

    def _read_project(self) -> list[PlacedRule]:
        with self._lock:
            return self._placed(self._load())

    def _load(self) -> dict[str, Any]:
        from agent.yaml_mapping import read_mapping

        if self._path is None:
            self.problem = ""
            return {}
        data, self.problem = read_mapping(self._path)
        return data

    def _placed(self, data: dict[str, Any]) -> list[PlacedRule]:
        placed: list[PlacedRule] = []
        for decision in Decision:
            for text in data.get(decision.value) or []:
                try:
                    placed.append(PlacedRule(parse_rule(text), decision, PROJECT))
                except RuleProblem as exc:
                    log.warning("%s: rule %r %s; it is ignored", self._path, text, exc)
        return placed

    def _write(self, data: dict[str, Any]) -> None:
        import yaml

        from storage.files import atomic_write, private_dir

        assert self._path is not None
        private_dir(self._path.parent)
        try:
            atomic_write(self._path, yaml.safe_dump(data, sort_keys=True, allow_unicode=True))
        except OSError as exc:
            raise PermissionsError(
                f"Not saved: {self._path} cannot be written ({exc.strerror})."
            ) from None

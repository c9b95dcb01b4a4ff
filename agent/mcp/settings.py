"""MCP servers as configured: `mcp_servers:` and `mcp:` in config.yaml, a project's .mcp.json.

config.yaml is the user's own file: a problem in it is a ConfigError naming the file, the line
and the key, and the app does not start (like every other setting). `.mcp.json` comes with
the repository, so it is outside input: a problem there skips that server with a sentence,
it never stops the app, and keys that would weaken approvals (`trust`) are not read from it.
A `.mcp.json` entry with a key the app does not read (another client's `alwaysAllow`,
`autoApprove`, `disabled`...) is skipped with a sentence naming the keys and why: such a key
may change what the server is allowed or whether it should run at all, so guessing is unsafe.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from agent.config_check import AtLeast, Must, settings

PROJECT_FILE = ".mcp.json"
SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
"""A server name: it becomes part of every tool name (`mcp__<server>__<tool>`)."""
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_SERVER_KEYS = (
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "trust",
    "enabled",
    "timeout_seconds",
    "startup_timeout_seconds",
    "description",
)
"""What a server entry may set: Claude Code's `.mcp.json` keys (type, command, args, env, url,
headers), then the app's own; `description` is a note for people and changes nothing."""
_PROJECT_IGNORED = ("trust",)
"""Keys a repository's .mcp.json may not set: only the user trusts a tool."""
_APPROVING_KEYS = frozenset({"alwaysallow", "autoapprove", "autoallow", "allowedtools"})
"""Other clients' keys that approve tools without asking (Cline's `alwaysAllow`, Amazon Q's
`autoApprove`...), compared without case, `_` or `-`: named as such when a project sets one."""
_PROJECT_KEYS = tuple(key for key in _SERVER_KEYS if key not in _PROJECT_IGNORED)
KEYS_LISTED = 4
"""How many unknown keys a sentence names before `and N more`."""


class ToolSearch(StrEnum):
    """When MCP tools go behind `mcp_tool_search`: over the budget, always, or never."""

    AUTO = "auto"
    ALWAYS = "always"
    NEVER = "never"


Seconds = Annotated[float, AtLeast(0)]


@settings
class McpSettings:
    """The `mcp:` section: timeouts and the schema budget of every server."""

    max_schema_tokens: Annotated[int, AtLeast(0), Must("be a whole number of tokens")] | None = None
    """Above this many tokens of MCP schemas, tools go behind tool search (None: 5 % of the
    model's window)."""
    tool_search: ToolSearch = ToolSearch.AUTO
    call_timeout_seconds: Seconds = 120.0
    startup_timeout_seconds: Seconds = 30.0
    turn_wait_seconds: Seconds = 5.0
    """How long a turn waits for servers that are still starting before it goes on without."""


class McpConfigProblem(Exception):
    """One server entry is wrong: the sentence says where and what."""


@dataclass(frozen=True)
class McpServerConfig:
    """One MCP server: how to reach it (stdio command or HTTP url) and what it is trusted with."""

    name: str
    transport: str = "stdio"  # stdio | http
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    trust: frozenset[str] = frozenset()
    trust_all: bool = False
    enabled: bool = True
    timeout_seconds: float | None = None
    startup_timeout_seconds: float | None = None
    origin: str = "config"  # config (the user's config.yaml) | project (.mcp.json)
    source: str = field(default="", compare=False)
    """The file it was read from, for sentences."""

    def trusts(self, tool: str) -> bool:
        """True when the user's config trusts `tool` of this server (never from .mcp.json)."""
        return self.trust_all or tool in self.trust

    @property
    def fingerprint(self) -> str:
        """A digest of what would run: consent to a project server is for exactly this."""
        what = {
            "transport": self.transport,
            "command": self.command,
            "args": list(self.args),
            "env": sorted(self.env),
            "cwd": self.cwd,
            "url": self.url,
            "headers": sorted(self.headers),
        }
        import hashlib  # not at module level: config loads before the app's first frame

        return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:32]

    def variables(self) -> list[str]:
        """The environment variables its definition expands (`${VAR}`), sorted."""
        texts = [self.command, *self.args, self.cwd or "", self.url]
        texts += [value for _key, value in (*self.env, *self.headers)]
        return sorted({m.group(1) for text in texts for m in _VARIABLE.finditer(text)})

    def describe(self) -> str:
        """What it runs or where it connects, in one line (header values left out)."""
        if self.transport == "http":
            return self.url
        return " ".join([self.command, *self.args])

    def __repr__(self) -> str:  # no env values or headers: they may hold keys
        return f"McpServerConfig(name={self.name!r}, transport={self.transport!r})"


def expand(text: str, environ: dict[str, str] | None = None) -> str:
    """`${VAR}` and `${VAR:-default}` replaced from the environment; a missing one raises."""
    env = os.environ if environ is None else environ

    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise McpConfigProblem(f"needs the environment variable {name}, which is not set")

    return _VARIABLE.sub(value, text)


def parse_server(name: str, entry: Any, *, origin: str, source: str) -> McpServerConfig:
    """One `mcp_servers` / `mcpServers` entry, checked; raises McpConfigProblem."""
    if not SERVER_NAME.match(str(name)):
        raise McpConfigProblem(
            f"server name {name!r} must be 1-40 letters, digits, `_` or `-` "
            "(it becomes part of each tool's name)"
        )
    if not isinstance(entry, dict):
        raise McpConfigProblem(f"server `{name}` must be a mapping")
    for key in entry:
        if key not in _SERVER_KEYS:
            # Another client's approval key in the user's own config: say what does it here.
            hint = (
                "; `trust:` (all, or a list of tool names) approves a server's tools here"
                if re.sub(r"[-_]", "", str(key).lower()) in _APPROVING_KEYS
                else ""
            )
            raise McpConfigProblem(
                f"unknown key `{name}.{key}` (known: {', '.join(sorted(_SERVER_KEYS))}){hint}"
            )
    transport = _transport(name, entry)
    values: dict[str, Any] = {"name": str(name), "transport": transport}
    if transport == "stdio":
        values["command"] = _text(name, entry, "command", required=True)
        values["args"] = _texts(name, entry, "args")
        values["env"] = _pairs(name, entry, "env")
        values["cwd"] = _text(name, entry, "cwd") or None
    else:
        values["url"] = _text(name, entry, "url", required=True)
        if not re.match(r"^https?://", values["url"]):
            raise McpConfigProblem(f"`{name}.url` must start with http:// or https://")
        values["headers"] = _pairs(name, entry, "headers")
    if origin == "config":
        values.update(_trust(name, entry))
    values["enabled"] = _flag(name, entry, "enabled")
    for key in ("timeout_seconds", "startup_timeout_seconds"):
        values[key] = _seconds(name, entry, key)
    return McpServerConfig(**values, origin=origin, source=source)


def _transport(name: str, entry: dict[str, Any]) -> str:
    kind = entry.get("type")
    if kind is None:
        kind = "http" if "url" in entry and "command" not in entry else "stdio"
    if kind == "streamable-http":
        kind = "http"
    if kind not in ("stdio", "http"):
        raise McpConfigProblem(
            f"`{name}.type` must be stdio or http (streamable HTTP), got {kind!r}"
        )
    return kind


def _text(name: str, entry: dict[str, Any], key: str, *, required: bool = False) -> str:
    value = entry.get(key)
    if value is None or value == "":
        if required:
            raise McpConfigProblem(f"server `{name}` needs `{key}`")
        return ""
    if not isinstance(value, str):
        raise McpConfigProblem(f"`{name}.{key}` must be text, got {value!r}")
    _check_syntax(name, key, value)
    return value


def _texts(name: str, entry: dict[str, Any], key: str) -> tuple[str, ...]:
    value = entry.get(key) or []
    if not isinstance(value, list) or not all(
        isinstance(item, str | int | float) and not isinstance(item, bool) for item in value
    ):
        raise McpConfigProblem(f"`{name}.{key}` must be a list of text")
    for item in value:
        _check_syntax(name, key, str(item))
    return tuple(str(item) for item in value)


def _pairs(name: str, entry: dict[str, Any], key: str) -> tuple[tuple[str, str], ...]:
    value = entry.get(key) or {}
    if not isinstance(value, dict):
        raise McpConfigProblem(f"`{name}.{key}` must map names to text")
    out: list[tuple[str, str]] = []
    for item, text in value.items():
        if not isinstance(text, str | int | float) or isinstance(text, bool):
            # The value is not echoed: an env entry or header may carry a credential.
            raise McpConfigProblem(f"`{name}.{key}.{item}` must be text")
        _check_syntax(name, f"{key}.{item}", str(text))
        out.append((str(item), str(text)))
    return tuple(out)


def _check_syntax(name: str, key: str, text: str) -> None:
    if "\x00" in text:
        raise McpConfigProblem(f"`{name}.{key}` contains a NUL character")
    if "${" in _VARIABLE.sub("", text):
        raise McpConfigProblem(f"`{name}.{key}` has a `${{` that is not `${{NAME}}`")


def _trust(name: str, entry: dict[str, Any]) -> dict[str, Any]:
    value = entry.get("trust")
    if value is None:
        return {}
    if value == "all":
        return {"trust_all": True}
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return {"trust": frozenset(value)}
    raise McpConfigProblem(f"`{name}.trust` must be `all` or a list of tool names")


def _flag(name: str, entry: dict[str, Any], key: str) -> bool:
    value = entry.get(key, True)
    if not isinstance(value, bool):
        raise McpConfigProblem(f"`{name}.{key}` must be true or false")
    return value


def _seconds(name: str, entry: dict[str, Any], key: str) -> float | None:
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise McpConfigProblem(f"`{name}.{key}` must be a positive number of seconds")
    return float(value)


def _shown_key(key: str) -> str:
    """A key from the repository's file as inert text: escapes shown, cut short."""
    text = json.dumps(str(key), ensure_ascii=False)[1:-1]
    return f"`{text[:40]}`" if len(text) <= 40 else f"`{text[:39]}…`"


def _listed(keys: list[str]) -> str:
    shown = [_shown_key(key) for key in keys[:KEYS_LISTED]]
    if len(keys) > KEYS_LISTED:
        shown.append(f"{len(keys) - KEYS_LISTED} more")
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def unknown_keys_problem(name: str, entry: dict[str, Any]) -> str | None:
    """The sentence skipping a project server whose entry sets keys the app does not read."""
    unknown = [str(key) for key in entry if key not in _SERVER_KEYS]
    if not unknown:
        return None
    approving = [k for k in unknown if re.sub(r"[-_]", "", k.lower()) in _APPROVING_KEYS]
    other = [key for key in unknown if key not in approving]
    reasons = []
    if approving:
        reasons.append(
            f"{_listed(approving)}, which would approve tools without asking "
            "(only your own config.yaml trusts tools)"
        )
    if other:
        reasons.append(
            f"{_listed(other)}, which hermes-tui does not read, so what the server would be "
            f"allowed or do cannot be told (it reads {', '.join(_PROJECT_KEYS)})"
        )
    return f"{PROJECT_FILE}: server `{name}` was skipped: it sets {'; and '.join(reasons)}."


def read_project_servers(workspace: Path) -> tuple[list[McpServerConfig], list[str]]:
    """The servers of `workspace/.mcp.json`, and a sentence for each one skipped.

    The file is the repository's: nothing in it stops the app, and none of it runs before
    the user consents (manager.py asks).
    """
    path = Path(workspace) / PROJECT_FILE
    try:
        with open(path, "rb") as handle:
            raw = handle.read(1_000_001)
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        return [], [f"{PROJECT_FILE}: cannot be read ({exc.strerror}); its servers are skipped."]
    if len(raw) > 1_000_000:
        return [], [f"{PROJECT_FILE}: over 1 MB; its servers are skipped."]
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        return [], [f"{PROJECT_FILE}: not valid JSON ({exc}); its servers are skipped."]
    except RecursionError:
        return [], [f"{PROJECT_FILE}: nested too deeply to read; its servers are skipped."]
    body = data.get("mcpServers") if isinstance(data, dict) else None
    if body is None:
        return [], []
    if not isinstance(body, dict):
        return [], [f"{PROJECT_FILE}: `mcpServers` must be an object; its servers are skipped."]
    servers: list[McpServerConfig] = []
    problems: list[str] = []
    for name, entry in body.items():
        unknown = (
            unknown_keys_problem(name, entry)
            if isinstance(entry, dict) and SERVER_NAME.match(str(name))
            else None
        )
        if unknown is not None:
            problems.append(unknown)
            continue
        if isinstance(entry, dict) and any(key in entry for key in _PROJECT_IGNORED):
            # parse_server reads `trust` only from the user's config (origin "config").
            problems.append(
                f"{PROJECT_FILE}: `{name}.trust` is ignored: only your own config.yaml "
                "trusts tools."
            )
        try:
            servers.append(parse_server(name, entry, origin="project", source=str(path)))
        except McpConfigProblem as exc:
            problems.append(f"{PROJECT_FILE}: {exc}; server skipped.")
    return servers, problems

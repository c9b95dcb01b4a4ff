"""config.yaml + environment -> typed configuration (dataclasses)."""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from agent.answer_cap import DEFAULT_MAX_ANSWER_MB
from agent.kinds import ApprovalMode, BusyInputMode, SandboxMode
from agent.mcp.settings import McpConfigProblem, McpServerConfig, McpSettings, parse_server
from agent.secrets import header_problem, is_credential_name, safe_url, unsendable_key

DEFAULT_MAX_ITERATIONS = 500
LOOPBACK_URL_PREFIXES = ("://127.0.0.1", "://localhost", "://[::1]")
"""A `base_url` containing one of these points at this machine."""
PROVIDER_KINDS = ("openai", "anthropic")
DEMO_PROVIDER = "demo"
DEMO_MODEL = "demo-model"
DEMO_CONTEXT_WINDOW = 32_768
"""The window the demo model says it has (the scripted server has none of its own)."""
SETUP_HINT = (
    "Demo model: set OPENAI_API_KEY or ANTHROPIC_API_KEY, "
    "or add a provider to {config} (see README)."
)
ENV_KEYS = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
}
"""Providers the environment configures, by the variable holding their key."""
NO_KEY = "No API key for provider {name}: {fix}, or start with --demo for the demo model."


class ConfigError(Exception):
    """A configuration problem, phrased as one sentence that names the file, line and key."""


@dataclass(frozen=True)
class ProviderConfig:
    """One provider entry: which wire it speaks and how to reach it."""

    name: str
    kind: str = "openai"
    base_url: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    api_keys_env: tuple[str, ...] = ()
    headers: dict[str, str] = field(default_factory=dict)
    context_window: int | None = None
    sticky_routing: bool = False
    max_tokens: int | None = None
    thinking_budget: int | None = None
    timeout_seconds: float = 600.0
    ca_file: str | None = None  # extra CA bundle (PEM) trusted besides the system store
    pricing: dict[str, dict[str, float]] = field(default_factory=dict)
    """USD per million tokens by model name ("*": any other model), for the cost shown."""
    discover: bool | None = None
    """Ask the server for its models and context window: None asks servers on this machine."""

    def resolved_key(self) -> str | None:
        """The key to use: inline, else the named environment variable(s)."""
        if self.api_key:
            return self.api_key
        if self.api_key_env and os.environ.get(self.api_key_env):
            return os.environ[self.api_key_env]
        for name in self.api_keys_env:
            if os.environ.get(name):
                return os.environ[name]
        return None

    @property
    def is_local(self) -> bool:
        """True for a server on this machine (Ollama, llama.cpp, vLLM): it needs no real key."""
        url = self.base_url or ""
        return any(host in url for host in LOOPBACK_URL_PREFIXES)

    def __repr__(self) -> str:  # never print a key, nor the credentials of a URL (K3, H5)
        url = safe_url(self.base_url) or None
        return f"ProviderConfig(name={self.name!r}, kind={self.kind!r}, base_url={url!r})"


@dataclass(frozen=True)
class AgentSettings:
    """The `agent:` section."""

    max_iterations: int = DEFAULT_MAX_ITERATIONS
    busy_input_mode: BusyInputMode = BusyInputMode.QUEUE
    approval: ApprovalMode = ApprovalMode.ASK
    stall_timeout_seconds: float = 300.0
    stream_idle_timeout_seconds: float = 180.0
    max_retries: int = 5
    retry_base_seconds: float = 1.0
    shell_timeout_seconds: float = 120.0
    shell_env_passthrough: tuple[str, ...] = ()
    """Key variables run_shell children may see anyway, by name (all are removed otherwise)."""
    system_prompt: str | None = None
    max_answer_mb: float = DEFAULT_MAX_ANSWER_MB
    """Answer text, and separately reasoning, kept per model call; past it the call ends as
    cut off, naming this bound (H10)."""


@dataclass(frozen=True)
class CompressionSettings:
    """The `compression:` section."""

    threshold: float = 0.75
    idle_timeout_seconds: float = 120.0
    total_ceiling_seconds: float = 600.0
    max_attempts: int = 3
    protect_first: int = 1  # model-visible messages kept at the start (the task)
    keep_recent: int = 4  # model-visible messages kept at the end (at least)


@dataclass(frozen=True)
class UISettings:
    """The `ui:` section."""

    theme: str = "hermes-dark"
    show_reasoning: bool = True


@dataclass(frozen=True)
class StorageSettings:
    """The `storage:` section: how long writes wait for another process's database lock."""

    lock_timeout_seconds: float = 5.0  # one write's wait before it reports the lock (and retries)
    exit_wait_seconds: float = 30.0  # at exit, how long queued writes wait for the lock to clear


@dataclass(frozen=True)
class CheckpointSettings:
    """The `checkpoints:` section: the workspace before each turn's first change (X2)."""

    enabled: bool = True
    max_file_mb: float = 10.0  # larger files are left out of checkpoints (and the user told)


@dataclass(frozen=True)
class ShellSettings:
    """`tools.shell`: what a sandboxed run_shell may reach."""

    network: bool = False  # the sandbox keeps the network out unless this is true
    unix_sockets: bool = False  # the sandbox closes Unix sockets (host daemons) unless true


@dataclass(frozen=True)
class Config:
    """The whole configuration: where files live, providers, and the settings sections."""

    home: Path
    model: str
    providers: dict[str, ProviderConfig]
    agent: AgentSettings = field(default_factory=AgentSettings)
    compression: CompressionSettings = field(default_factory=CompressionSettings)
    ui: UISettings = field(default_factory=UISettings)
    storage: StorageSettings = field(default_factory=StorageSettings)
    checkpoints: CheckpointSettings = field(default_factory=CheckpointSettings)
    keys: dict[str, str] = field(default_factory=dict)
    demo: bool = False
    sandbox: SandboxMode = SandboxMode.AUTO
    sandbox_hide: tuple[str, ...] = ()
    """`sandbox.hide`: places commands do not see, besides agent/tools/hiding.py's list."""
    sandbox_allow_read: tuple[str, ...] = ()
    """`sandbox.allow_read`: hidden places commands may read after all (never the app's home)."""
    shell: ShellSettings = field(default_factory=ShellSettings)
    mcp: McpSettings = field(default_factory=McpSettings)
    mcp_servers: dict[str, McpServerConfig] = field(default_factory=dict)
    """The user's MCP servers (`mcp_servers:`); a project's .mcp.json is read per workspace."""

    @property
    def config_path(self) -> Path:
        """$HERMES_TUI_HOME/config.yaml."""
        return self.home / "config.yaml"

    @property
    def app_homes(self) -> tuple[Path, ...]:
        """The app's own homes, links followed: the one in use (`$HERMES_TUI_HOME`) and the
        platform's default, which keeps its config and consents even when the variable points
        elsewhere (H9: file tools always ask there, the sandbox hides them)."""
        homes = (self.home.expanduser(), platform_home())
        return tuple(dict.fromkeys(Path(os.path.realpath(home)) for home in homes))

    @property
    def db_path(self) -> Path:
        """$HERMES_TUI_HOME/state.db."""
        return self.home / "state.db"

    @property
    def setup_hint(self) -> str:
        """One line telling a demo user how to configure a real provider."""
        return SETUP_HINT.format(config=tilde(self.config_path))

    def provider(self, name: str) -> ProviderConfig:
        """The provider called `name`, or a ConfigError naming the known ones."""
        try:
            return self.providers[name]
        except KeyError:
            unset = unset_env_key(name)
            if unset:
                raise ConfigError(unset) from None
            known = ", ".join(sorted(self.providers)) or "none"
            raise ConfigError(
                f"Unknown provider {name!r} (configured: {known}); "
                f"add it under `providers:` in {self.config_path}."
            ) from None

    def with_model(self, model: str) -> Config:
        """A copy whose default model is `model`."""
        return replace(self, model=model)

    def missing_key(self, model: str | None = None) -> str | None:
        """The sentence saying which key `model`'s (default: the configured model's) hosted
        provider lacks, before any request; None when it has one or needs none."""
        if self.demo and model is None:
            return None
        name = split_model_ref(model or self.model)[0]
        provider = self.providers.get(name)
        if provider is None:
            return None  # an unknown provider is its own ConfigError
        return missing_key(provider, self.config_path)


def missing_key(provider: ProviderConfig, config_path: Path | None = None) -> str | None:
    """Why `provider` cannot be called for want of a key, naming what to set; else None.

    A loopback server (Ollama, llama.cpp, vLLM) needs no key.
    """
    if provider.resolved_key() or provider.is_local:
        return None
    where = f"providers.{provider.name}" + (f" in {config_path}" if config_path else "")
    names = [n for n in (provider.api_key_env, *provider.api_keys_env) if n]
    if names:
        variables = " or ".join(names)
        fix = f"set {variables} in the environment (named by {where})"
    else:
        fix = f"set api_key_env (or api_key) under {where}"
    return NO_KEY.format(name=provider.name, fix=fix)


def unset_env_key(name: str) -> str | None:
    """For a provider the environment configures (openai, anthropic, openrouter) whose
    variable is unset: the sentence naming that variable; else None."""
    variable = ENV_KEYS.get(name)
    if variable is None or os.environ.get(variable):
        return None
    return NO_KEY.format(name=name, fix=f"set {variable} in the environment")


def default_home() -> Path:
    """$HERMES_TUI_HOME, else the platform's user config dir for hermes-tui."""
    env = os.environ.get("HERMES_TUI_HOME")
    if env:
        return Path(env).expanduser()
    return platform_home()


def platform_home() -> Path:
    """The platform's user config dir for hermes-tui (~/.config/hermes-tui on Linux)."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("hermes-tui"))


def tilde(path: Path | str) -> str:
    """`path` with the user's home shown as `~` (short, and the same on every machine)."""
    text, home = str(path), str(Path.home())
    if home not in ("", os.sep) and (text == home or text.startswith(home + os.sep)):
        return "~" + text[len(home) :]
    return text


def split_model_ref(ref: str) -> tuple[str, str]:
    """ "provider:model" -> (provider, model); raises ConfigError when malformed."""
    provider, sep, model = ref.partition(":")
    if not sep or not provider or not model:
        raise ConfigError(f"Model {ref!r} must look like provider:model, e.g. openai:gpt-4.1.")
    return provider, model


_SECTION_TYPES = {
    "agent": AgentSettings,
    "compression": CompressionSettings,
    "ui": UISettings,
    "storage": StorageSettings,
    "checkpoints": CheckpointSettings,
    "mcp": McpSettings,
}
_TOP_KEYS = {
    "model", "providers", "agent", "compression", "ui", "keys", "storage", "checkpoints",
    "sandbox", "tools", "mcp", "mcp_servers",
}  # fmt: skip
_PROVIDER_KEYS = set(ProviderConfig.__dataclass_fields__) - {"name"}


class _Mapping(dict):
    """A dict that knows the source line of each key."""

    def __init__(self, data: dict[str, Any], lines: dict[str, int]) -> None:
        super().__init__(data)
        self.lines = lines


@functools.cache
def _line_loader() -> type:
    """A YAML loader (libyaml's when present) that remembers the line of every mapping key.

    Built on first use: PyYAML is not imported on the way to the first frame when there is
    no config file to read (the demo, a first start).
    """
    import yaml

    class LineLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        pass

    def construct_mapping(loader: Any, node: Any) -> dict[str, Any]:
        mapping = loader.construct_mapping(node, deep=True)
        lines = {str(key_node.value): key_node.start_mark.line + 1 for key_node, _ in node.value}
        return _Mapping(mapping, lines)

    LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return LineLoader


def _where(path: Path, mapping: Any, key: str) -> str:
    line = getattr(mapping, "lines", {}).get(key)
    return f"{path}, line {line}" if line else str(path)


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"Cannot read {path}: {exc.strerror}.") from None
    import yaml

    try:
        data = yaml.load(text, Loader=_line_loader())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}, line {mark.line + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(
            f"{where}: broken YAML ({problem}); fix the file or move it away."
        ) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of settings.")
    return data


def _section(path: Path, raw: dict[str, Any], name: str, cls: type) -> Any:
    body = raw.get(name)
    if body is None:
        return cls()
    if not isinstance(body, dict):
        raise ConfigError(f"{_where(path, raw, name)}: `{name}` must be a mapping.")
    fields = cls.__dataclass_fields__
    values: dict[str, Any] = {}
    for key, value in body.items():
        if key not in fields:
            known = ", ".join(sorted(fields))
            raise ConfigError(
                f"{_where(path, body, key)}: unknown key `{name}.{key}` (known: {known})."
            )
        default = fields[key].default
        values[key] = _coerce(path, body, f"{name}.{key}", key, value, default)
    settings = cls(**values)
    _validate_choices(path, body, name, settings)
    return settings


def _coerce(path: Path, mapping: Any, label: str, key: str, value: Any, default: Any) -> Any:
    if default is None or value is None:
        return value
    if isinstance(default, StrEnum) and isinstance(value, str):
        return _choice(path, mapping, label, key, value, default)
    expected = type(default)
    if expected is tuple:
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return tuple(value)
        raise ConfigError(
            f"{_where(path, mapping, key)}: `{label}` must be a list of names, got {value!r}."
        )
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if expected is int and isinstance(value, bool):
        pass
    elif isinstance(value, expected):
        return value
    noun = _TYPE_NOUNS.get(expected, f"a {expected.__name__}")
    raise ConfigError(f"{_where(path, mapping, key)}: `{label}` must be {noun}, got {value!r}.")


_TYPE_NOUNS = {int: "an integer", float: "a number", bool: "true or false", str: "text"}
"""What a setting of each type must be, in words."""


def _choice(path: Path, mapping: Any, label: str, key: str, value: str, default: StrEnum) -> Any:
    """A string setting with named choices (`agent.approval`...) as its StrEnum member."""
    choices = type(default)
    if value not in choices.__members__.values():
        raise ConfigError(
            f"{_where(path, mapping, key)}: `{label}` must be one of "
            f"{', '.join(choices)}, got {value!r}."
        )
    return choices(value)


def _validate_choices(path: Path, body: Any, name: str, settings: Any) -> None:
    if name == "agent" and settings.max_iterations < 1:
        raise ConfigError(f"{_where(path, body, 'max_iterations')}: must be at least 1.")
    if name == "agent" and not 0 < settings.max_answer_mb <= 1024:
        raise ConfigError(
            f"{_where(path, body, 'max_answer_mb')}: `agent.max_answer_mb` must be more than 0 "
            "and at most 1024."
        )
    if name == "agent":
        for env_name in settings.shell_env_passthrough:
            if not _ENV_NAME.match(env_name):
                raise ConfigError(
                    f"{_where(path, body, 'shell_env_passthrough')}: `agent.shell_env_passthrough` "
                    f"lists {env_name!r}, which is not an environment variable name."
                )
    if name == "mcp":
        _validate_mcp(path, body, settings)
    if name == "storage":
        for key in ("lock_timeout_seconds", "exit_wait_seconds"):
            if getattr(settings, key) < 0:
                raise ConfigError(f"{_where(path, body, key)}: `storage.{key}` must be >= 0.")


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _validate_mcp(path: Path, body: Any, settings: McpSettings) -> None:
    tokens = settings.max_schema_tokens
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int)):
        raise ConfigError(
            f"{_where(path, body, 'max_schema_tokens')}: `mcp.max_schema_tokens` must be a "
            f"whole number of tokens, got {tokens!r}."
        )
    if tokens is not None and tokens < 0:
        raise ConfigError(f"{_where(path, body, 'max_schema_tokens')}: must be >= 0.")
    for key in ("call_timeout_seconds", "startup_timeout_seconds", "turn_wait_seconds"):
        if getattr(settings, key) < 0:
            raise ConfigError(f"{_where(path, body, key)}: `mcp.{key}` must be >= 0.")


def _mcp_servers(path: Path, raw: dict[str, Any]) -> dict[str, McpServerConfig]:
    """`mcp_servers:`: the user's MCP servers, each checked (a mistake names its line)."""
    body = raw.get("mcp_servers") or {}
    if not isinstance(body, dict):
        raise ConfigError(
            f"{_where(path, raw, 'mcp_servers')}: `mcp_servers` must map server names to "
            "their settings."
        )
    out: dict[str, McpServerConfig] = {}
    for name, entry in body.items():
        try:
            out[str(name)] = parse_server(name, entry, origin="config", source=str(path))
        except McpConfigProblem as exc:
            keys = (
                [k for k in entry if f"`{name}.{k}" in str(exc)] if isinstance(entry, dict) else []
            )
            where = _where(path, entry, keys[0]) if keys else _where(path, body, name)
            raise ConfigError(f"{where}: mcp_servers: {exc}.") from None
    return out


def _providers(path: Path, raw: dict[str, Any]) -> dict[str, ProviderConfig]:
    body = raw.get("providers") or {}
    if not isinstance(body, dict):
        raise ConfigError(f"{_where(path, raw, 'providers')}: `providers` must be a mapping.")
    out: dict[str, ProviderConfig] = {}
    for name, entry in body.items():
        if not isinstance(entry, dict):
            raise ConfigError(f"{_where(path, body, name)}: provider `{name}` must be a mapping.")
        for key in entry:
            if key not in _PROVIDER_KEYS:
                known = ", ".join(sorted(_PROVIDER_KEYS))
                raise ConfigError(
                    f"{_where(path, entry, key)}: unknown key `providers.{name}.{key}` "
                    f"(known: {known})."
                )
        kind = entry.get("kind", "openai")
        if kind not in PROVIDER_KINDS:
            raise ConfigError(
                f"{_where(path, entry, 'kind')}: provider `{name}` has unknown kind {kind!r}; "
                f"use one of {', '.join(PROVIDER_KINDS)}."
            )
        keys_env = entry.get("api_keys_env") or ()
        if isinstance(keys_env, str):
            keys_env = (keys_env,)
        values = dict(entry)
        values["api_keys_env"] = tuple(keys_env)
        values["headers"] = _headers(path, name, entry)
        _check_inline_key(path, name, entry)
        _check_flag(path, name, entry, "discover")
        values["pricing"] = _pricing(path, name, entry)
        out[str(name)] = ProviderConfig(name=str(name), **values)
    return out


def _check_inline_key(path: Path, name: str, entry: dict[str, Any]) -> None:
    """An inline `api_key` must be text that fits in an HTTP header (H5)."""
    key = entry.get("api_key")
    if key is None:
        return
    where = _where(path, entry, "api_key")
    if not isinstance(key, str):
        raise ConfigError(f"{where}: `providers.{name}.api_key` must be a string; quote it.")
    problem = header_problem(key)
    if problem:
        raise ConfigError(
            f"{where}: `providers.{name}.api_key` contains {problem}, which cannot be sent in "
            "an HTTP header; set it again without it."
        )


def _check_flag(path: Path, name: str, entry: dict[str, Any], key: str) -> None:
    """A yes/no provider setting must be true or false."""
    value = entry.get(key)
    if value is not None and not isinstance(value, bool):
        raise ConfigError(
            f"{_where(path, entry, key)}: `providers.{name}.{key}` must be true or false, "
            f"got {value!r}."
        )


def _headers(path: Path, name: str, entry: dict[str, Any]) -> dict[str, str]:
    """`providers.NAME.headers`: names and text values that fit in an HTTP header."""
    body = entry.get("headers") or {}
    where = _where(path, entry, "headers")
    if not isinstance(body, dict):
        raise ConfigError(f"{where}: `providers.{name}.headers` must map header names to values.")
    out: dict[str, str] = {}
    for header, value in body.items():
        label = f"providers.{name}.headers.{header}"
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise ConfigError(f"{where}: `{label}` must be text, got {value!r}.")
        problem = header_problem(str(header)) or header_problem(str(value))
        if problem:
            # The value itself is not echoed: a header may carry a credential.
            shown = "" if is_credential_name(str(header)) else f" ({value!r})"
            raise ConfigError(
                f"{where}: `{label}`{shown} contains {problem}, which cannot be sent in an "
                "HTTP header."
            )
        out[str(header)] = str(value)
    return out


def _pricing(path: Path, name: str, entry: dict[str, Any]) -> dict[str, dict[str, float]]:
    """`providers.NAME.pricing`: {model: {input: 3.0, output: 15.0, ...}} in USD per million."""
    from agent.pricing import PRICE_KEYS

    body = entry.get("pricing") or {}
    where = _where(path, entry, "pricing")
    if not isinstance(body, dict):
        raise ConfigError(
            f"{where}: `providers.{name}.pricing` must map model names to prices, e.g. "
            "`gpt-4.1: {input: 2.0, output: 8.0}` (USD per million tokens)."
        )
    out: dict[str, dict[str, float]] = {}
    for model, prices in body.items():
        key = f"providers.{name}.pricing.{model}"
        if not isinstance(prices, dict):
            raise ConfigError(
                f"{where}: `{key}` must be a mapping like {{input: 2.0, output: 8.0}}."
            )
        for kind, value in prices.items():
            if kind not in PRICE_KEYS:
                raise ConfigError(
                    f"{where}: unknown price `{key}.{kind}` (known: {', '.join(PRICE_KEYS)})."
                )
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ConfigError(
                    f"{where}: `{key}.{kind}` must be a number of dollars per million tokens, "
                    f"not {value!r}."
                )
        out[str(model)] = {str(kind): float(value) for kind, value in prices.items()}
    return out


def _env_providers(existing: dict[str, ProviderConfig]) -> dict[str, ProviderConfig]:
    """Providers implied by the environment when the config does not name them."""
    out = dict(existing)
    if "openai" not in out and os.environ.get("OPENAI_API_KEY"):
        out["openai"] = ProviderConfig(
            name="openai",
            kind="openai",
            base_url=os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1",
            api_key_env="OPENAI_API_KEY",
        )
    if "anthropic" not in out and os.environ.get("ANTHROPIC_API_KEY"):
        out["anthropic"] = ProviderConfig(
            name="anthropic", kind="anthropic", api_key_env="ANTHROPIC_API_KEY"
        )
    if "openrouter" not in out and os.environ.get("OPENROUTER_API_KEY"):
        out["openrouter"] = ProviderConfig(
            name="openrouter",
            kind="openai",
            base_url="https://openrouter.ai/api/v1",
            api_key_env="OPENROUTER_API_KEY",
        )
    return out


_ENV_DEFAULT_MODELS = (
    ("openai", "openai:gpt-4.1"),
    ("anthropic", "anthropic:claude-sonnet-4-5"),
    ("openrouter", "openrouter:openai/gpt-4.1"),
)


def load_config(home: Path | None = None, *, demo: bool = False) -> Config:
    """Read $HERMES_TUI_HOME/config.yaml and the environment.

    The demo model runs only when nothing at all is configured (no `model`, no provider in
    the file or the environment) or with `demo`. A configured hosted provider without a key
    stays the model: `Config.missing_key()` says what to set, before any request.
    """
    home = home or default_home()
    path = home / "config.yaml"
    raw = _read_yaml(path)
    for key in raw:
        if key not in _TOP_KEYS:
            known = ", ".join(sorted(_TOP_KEYS))
            raise ConfigError(f"{_where(path, raw, key)}: unknown key `{key}` (known: {known}).")
    providers = _env_providers(_providers(path, raw))
    sections = {name: _section(path, raw, name, cls) for name, cls in _SECTION_TYPES.items()}
    keys = _binding_keys(path, raw)
    mode, hide, allow_read = _sandbox(path, raw, home)
    extra = {"sandbox": mode, "sandbox_hide": hide, "sandbox_allow_read": allow_read}
    extra["shell"] = _shell_settings(path, raw)
    extra["mcp_servers"] = _mcp_servers(path, raw)
    model = _configured_model(path, raw, providers)
    usable = {n for n, p in providers.items() if p.resolved_key() or p.is_local}
    if not model:
        model = next((m for name, m in _ENV_DEFAULT_MODELS if name in usable), None)
        # Providers but no `model:`: the first usable one, else the first one (whose
        # missing key is then the sentence the user sees).
        candidates = sorted(usable) or sorted(providers)
        if model is None and candidates:
            model = f"{candidates[0]}:default"
    is_demo = demo or model is None or split_model_ref(model)[0] == DEMO_PROVIDER
    if is_demo:
        providers = {**providers, DEMO_PROVIDER: ProviderConfig(name=DEMO_PROVIDER, api_key="demo")}
        model = f"{DEMO_PROVIDER}:{DEMO_MODEL}"
    else:
        # Before anything is sent or stored: a key from the environment that cannot go into
        # a header is a sentence naming the variable, not an error deep in the HTTP client.
        problem = unsendable_key(providers[split_model_ref(model)[0]])
        if problem:
            raise ConfigError(problem)
    return Config(
        home=home, model=model, providers=providers, keys=keys, demo=is_demo, **sections, **extra
    )


def _sandbox(
    path: Path, raw: dict[str, Any], home: Path
) -> tuple[SandboxMode, tuple[str, ...], tuple[str, ...]]:
    """The top-level `sandbox:` setting: a mode (auto, the default; on; off), or a mapping
    `{mode: auto, hide: [...], allow_read: [...]}` that adds to and takes from the places
    sandboxed commands do not see (agent/tools/hiding.py)."""
    value = raw.get("sandbox")
    if not isinstance(value, dict):
        return _sandbox_mode(path, raw, "sandbox", value), (), ()
    for key in value:
        if key not in _SANDBOX_KEYS:
            known = ", ".join(_SANDBOX_KEYS)
            raise ConfigError(
                f"{_where(path, value, key)}: unknown key `sandbox.{key}` (known: {known})."
            )
    mode = _sandbox_mode(path, value, "mode", value.get("mode"))
    hide = _places(path, value, "hide")
    allow_read = _places(path, value, "allow_read")
    own = Path(os.path.realpath(home.expanduser()))
    for place in allow_read:
        real = Path(os.path.realpath(Path(place).expanduser()))
        if real == own or real.is_relative_to(own):
            raise ConfigError(
                f"{_where(path, value, 'allow_read')}: `sandbox.allow_read` lists {place}, "
                "which is in the app's own home; the sandbox always hides it from commands."
            )
    return mode, hide, allow_read


_SANDBOX_KEYS = ("mode", "hide", "allow_read")


def _sandbox_mode(path: Path, mapping: Any, key: str, value: Any) -> SandboxMode:
    """`sandbox:` (or `sandbox.mode`): auto (the default), on or off."""
    label = "sandbox" if key == "sandbox" else f"sandbox.{key}"
    if value is None:
        return SandboxMode.AUTO
    if value is True or value is False:  # YAML reads a bare on/off as a boolean
        return SandboxMode.ON if value else SandboxMode.OFF
    if not isinstance(value, str):
        raise ConfigError(
            f"{_where(path, mapping, key)}: `{label}` must be auto, on or off, or a mapping "
            "with mode, hide and allow_read."
        )
    return _choice(path, mapping, label, key, value, SandboxMode.AUTO)


def _places(path: Path, mapping: Any, key: str) -> tuple[str, ...]:
    """`sandbox.hide` or `sandbox.allow_read`: paths starting with `~/` or `/`."""
    value = mapping.get(key)
    if value is None:
        return ()
    where = _where(path, mapping, key)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where}: `sandbox.{key}` must be a list of paths, got {value!r}.")
    for item in value:
        if not (item == "~" or item.startswith(("~/", "/"))) or item.strip("/") == "":
            raise ConfigError(
                f"{where}: `sandbox.{key}` lists {item!r}; give a path that starts with ~/ "
                "or / (and is not / itself)."
            )
    return tuple(item.rstrip("/") or item for item in value)


def _shell_settings(path: Path, raw: dict[str, Any]) -> ShellSettings:
    """`tools: {shell: {network: true, unix_sockets: true}}`: the tools settings there are."""
    tools = raw.get("tools")
    if tools is None:
        return ShellSettings()
    if not isinstance(tools, dict):
        raise ConfigError(f"{_where(path, raw, 'tools')}: `tools` must be a mapping.")
    for key in tools:
        if key != "shell":
            raise ConfigError(
                f"{_where(path, tools, key)}: unknown key `tools.{key}` (known: shell)."
            )
    shell = tools.get("shell")
    if shell is None:
        return ShellSettings()
    if not isinstance(shell, dict):
        raise ConfigError(f"{_where(path, tools, 'shell')}: `tools.shell` must be a mapping.")
    return _section(path, {"tools.shell": shell}, "tools.shell", ShellSettings)


def _binding_keys(path: Path, raw: dict[str, Any]) -> dict[str, str]:
    """The `keys:` section: binding id -> key."""
    keys = raw.get("keys") or {}
    if not isinstance(keys, dict):
        raise ConfigError(f"{_where(path, raw, 'keys')}: `keys` must map binding ids to keys.")
    return {str(k): str(v) for k, v in keys.items()}


def _configured_model(
    path: Path, raw: dict[str, Any], providers: dict[str, ProviderConfig]
) -> str | None:
    """The `model:` setting, checked to name a configured provider (or None)."""
    model = raw.get("model")
    if model is not None and not isinstance(model, str):
        raise ConfigError(f"{_where(path, raw, 'model')}: `model` must be provider:model.")
    if model:
        provider_name, _ = _checked_model(path, raw, model)
        if provider_name not in providers and provider_name != DEMO_PROVIDER:
            unset = unset_env_key(provider_name)
            if unset:
                raise ConfigError(f"{_where(path, raw, 'model')}: {unset}")
            known = ", ".join(sorted(providers)) or "none"
            raise ConfigError(
                f"{_where(path, raw, 'model')}: `model` names provider {provider_name!r}, "
                f"which is not configured (configured: {known})."
            )
    return model


def _checked_model(path: Path, raw: Any, model: str) -> tuple[str, str]:
    try:
        return split_model_ref(model)
    except ConfigError as exc:
        raise ConfigError(f"{_where(path, raw, 'model')}: {exc}") from None


def save_ui_theme(home: Path, name: str) -> None:
    """Remember the chosen theme: set only `ui.theme` in config.yaml, keeping the rest as is."""
    import yaml

    path = home / "config.yaml"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    before = yaml.safe_load(text) or {}
    if not isinstance(before, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of settings.")
    ui = before.get("ui") or {}
    expected = {**before, "ui": {**(ui if isinstance(ui, dict) else {}), "theme": name}}
    updated = _with_ui_theme(text, name)
    if yaml.safe_load(updated) != expected:
        # An unusual layout (flow style, anchors): keep the data, lose the formatting.
        updated = yaml.safe_dump(expected, sort_keys=False, allow_unicode=True)
    from storage.files import atomic_write, private_dir

    private_dir(home)
    # Atomic and fsynced; the file keeps its mode (a 0600 config stays 0600; a new one is 0600).
    atomic_write(path, updated)


def _with_ui_theme(text: str, name: str) -> str:
    """`text` with `ui.theme` set by editing lines, so comments and order survive."""
    import yaml

    value = name if yaml.safe_load(name) == name else json.dumps(name)
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(r"^ui:\s*(#.*)?$", line)), None)
    if start is None:
        tail = "" if not text or text.endswith("\n") else "\n"
        return f"{text}{tail}ui:\n  theme: {value}\n"
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][:1] in (" ", "\t", "#")):
        end += 1
    children = [line for line in lines[start + 1 : end] if line.strip()[:1] not in ("", "#")]
    indent = re.match(r"^\s*", children[0]).group(0) if children else "  "
    for i in range(start + 1, end):
        if re.match(rf"^{re.escape(indent)}theme\s*:", lines[i]):
            lines[i] = f"{indent}theme: {value}"
            break
    else:
        lines.insert(start + 1, f"{indent}theme: {value}")
    return "\n".join(lines) + "\n"

"""config.yaml + environment -> typed configuration.

Each section is declared once, below, as a `@settings` dataclass: one line per setting, its
type and its default; agent/config_check.py checks the file against these declarations and
words a mistake as one sentence naming the file, the line and the key. `ui:` and `keys:` are
the front end's (hermes_tui/ui_config.py): they pass through here unread.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from agent.answer_cap import DEFAULT_MAX_ANSWER_MB
from agent.config_cache import CheckedFile, cache_key, config_cache_path
from agent.config_check import (
    NOT_IN_FILE,
    AtLeast,
    Before,
    Check,
    Must,
    checked,
    one_or_many,
    scalar_text,
    settings,
)
from agent.config_source import ConfigError, LineMapping, parse_yaml, read_source, where
from agent.credentials import header_problem, safe_url, unsendable_key
from agent.homes import default_home, platform_home, tilde
from agent.hooks.settings import HookSettings
from agent.kinds import ApprovalMode, BusyInputMode, SandboxMode
from agent.mcp.settings import McpConfigProblem, McpServerConfig, McpSettings, parse_server
from agent.pricing import PriceKey

# Defined where they belong, and part of what callers import from here.
__all__ = ["ConfigError", "default_home", "platform_home", "tilde"]

DEFAULT_MAX_ITERATIONS = 500
LOOPBACK_URL_PREFIXES = ("://127.0.0.1", "://localhost", "://[::1]")
"""A `base_url` containing one of these points at this machine."""
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
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ProviderKind(StrEnum):
    """`providers.NAME.kind`: the wire a provider speaks."""

    OPENAI = "openai"
    ANTHROPIC = "anthropic"


# -- what a value must be, beyond its type -------------------------------------------------------


def _unsendable(text: str) -> str | None:
    problem = header_problem(text)
    return f"contains {problem}, which cannot be sent in an HTTP header" if problem else None


def _unsendable_key(key: str) -> str | None:
    problem = _unsendable(key)
    return f"{problem}; set it again without it" if problem else None


def _not_a_variable(name: str) -> str | None:
    return (
        None
        if _ENV_NAME.match(name)
        else f"lists {name!r}, which is not an environment variable name"
    )


def _not_an_answer_bound(megabytes: float) -> str | None:
    return None if 0 < megabytes <= 1024 else "must be more than 0 and at most 1024"


def _not_a_place(item: str) -> str | None:
    if (item == "~" or item.startswith(("~/", "/"))) and item.strip("/"):
        return None
    return f"lists {item!r}; give a path that starts with ~/ or / (and is not / itself)"


def _not_a_rule(text: str) -> str | None:
    from agent.tools.rules import RuleProblem, parse_rule

    try:
        parse_rule(text)
    except RuleProblem as exc:
        return f"lists {text!r}, which {exc}"
    return None


Seconds = Annotated[float, AtLeast(0)]
HeaderText = Annotated[str, Before(scalar_text), Check(_unsendable)]
Price = Annotated[float, AtLeast(0), Must("be a number of dollars per million tokens")]
Prices = Annotated[dict[PriceKey, Price], Must("be a mapping like {input: 2.0, output: 8.0}")]
Places = Annotated[tuple[Annotated[str, Check(_not_a_place)], ...], Must("be a list of paths")]


# -- the sections --------------------------------------------------------------------------------


@settings
class ModelSettings:
    """`providers.NAME.models.MODEL`: what is known of one model of a provider."""

    images: bool | None = None
    """False: the model takes no images (they are refused in one sentence, G4); unset or
    true: images are sent."""


@settings
class ProviderConfig:
    """One provider entry: which wire it speaks and how to reach it."""

    name: str = field(metadata=NOT_IN_FILE)
    kind: ProviderKind = ProviderKind.OPENAI
    base_url: str | None = None
    api_key: Annotated[str, Check(_unsendable_key), Must("be a string; quote it")] | None = None
    api_key_env: str | None = None
    api_keys_env: Annotated[tuple[str, ...], Before(one_or_many)] = ()
    headers: Annotated[
        dict[Annotated[str, Check(_unsendable)], HeaderText], Must("map header names to values")
    ] = field(default_factory=dict)
    context_window: int | None = None
    sticky_routing: bool = False
    max_tokens: int | None = None
    thinking_budget: int | None = None
    timeout_seconds: float = 600.0
    ca_file: str | None = None  # extra CA bundle (PEM) trusted besides the system store
    pricing: Annotated[
        dict[str, Prices],
        Must(
            "map model names to prices, e.g. `gpt-4.1: {input: 2.0, output: 8.0}` "
            "(USD per million tokens)"
        ),
    ] = field(default_factory=dict)
    """USD per million tokens by model name ("*": any other model), for the cost shown."""
    discover: bool | None = None
    """Ask the server for its models and context window: None asks servers on this machine."""
    models: Annotated[
        dict[str, ModelSettings],
        Must("map model names to their settings, e.g. `my-model: {images: false}`"),
    ] = field(default_factory=dict)

    cache_breakpoints: bool | None = None
    """Mark the prompt-cache breakpoints ($1): None marks them on the Anthropic wire and for
    Anthropic models on OpenRouter; true also elsewhere (a proxy that passes them on)."""

    def takes_images(self, model: str) -> bool:
        """Whether `model` is sent images: yes unless it is known not to take them (G4)."""
        known = self.models.get(model)
        return known is None or known.images is not False

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
        return f"ProviderConfig(name={self.name!r}, kind={str(self.kind)!r}, base_url={url!r})"


@settings
class AgentSettings:
    """The `agent:` section."""

    max_iterations: Annotated[int, AtLeast(1)] = DEFAULT_MAX_ITERATIONS
    busy_input_mode: BusyInputMode = BusyInputMode.QUEUE
    approval: ApprovalMode = ApprovalMode.ASK
    stall_timeout_seconds: float = 300.0
    stream_idle_timeout_seconds: float = 180.0
    max_retries: int = 5
    retry_base_seconds: float = 1.0
    shell_timeout_seconds: float = 120.0
    shell_env_passthrough: tuple[Annotated[str, Check(_not_a_variable)], ...] = ()
    """Key variables run_shell children may see anyway, by name (all are removed otherwise)."""
    system_prompt: str | None = None
    max_answer_mb: Annotated[float, Check(_not_an_answer_bound)] = DEFAULT_MAX_ANSWER_MB
    """Answer text, and separately reasoning, kept per model call; past it the call ends as
    cut off, naming this bound (H10)."""


@settings
class CompressionSettings:
    """The `compression:` section."""

    threshold: float = 0.75
    idle_timeout_seconds: float = 120.0
    total_ceiling_seconds: float = 600.0
    max_attempts: int = 3
    protect_first: int = 1  # model-visible messages kept at the start (the task)
    keep_recent: int = 4  # model-visible messages kept at the end (at least)


@settings
class BudgetSettings:
    """The `budget:` section: spend caps in the currency of the prices, USD ($2)."""

    turn: Annotated[float, AtLeast(0)] | None = None
    session: Annotated[float, AtLeast(0)] | None = None
    day: Annotated[float, AtLeast(0)] | None = None  # the local calendar day, every session
    ask_above_tokens: Annotated[int, AtLeast(1)] = 100_000  # a larger request asks first


@settings
class StorageSettings:
    """The `storage:` section: how long writes wait for another process's database lock."""

    lock_timeout_seconds: Seconds = 5.0  # one write's wait before it reports the lock (and retries)
    exit_wait_seconds: Seconds = 30.0  # at exit, how long queued writes wait for the lock to clear


@settings
class CheckpointSettings:
    """The `checkpoints:` section: the workspace before each turn's first change (X2)."""

    enabled: bool = True
    max_file_mb: float = 10.0  # larger files are left out of checkpoints (and the user told)


@settings
class ShellSettings:
    """`tools.shell`: what a sandboxed run_shell may reach."""

    network: bool = False  # the sandbox keeps the network out unless this is true
    unix_sockets: bool = False  # the sandbox closes Unix sockets (host daemons) unless true


@settings
class ToolsSettings:
    """The `tools:` section."""

    shell: ShellSettings = field(default_factory=ShellSettings)


def _on_off(value: Any) -> Any:
    """YAML reads a bare `on`/`off` as a boolean: the mode it meant."""
    return ("on" if value else "off") if isinstance(value, bool) else value


def _mode_or_mapping(value: Any) -> Any:
    """`sandbox: on` is `sandbox: {mode: on}`."""
    return {"mode": value} if isinstance(value, bool) or value in tuple(SandboxMode) else value


Rules = Annotated[
    tuple[Annotated[str, Check(_not_a_rule)], ...],
    Must("be a list of rules like run_shell(pytest *) or mcp__git__*"),
]


def _not_a_host(text: str) -> str | None:
    from agent.web_hosts import host_pattern_problem

    problem = host_pattern_problem(text)
    return None if problem is None else f"lists {text!r}, which {problem}"


Hosts = Annotated[
    tuple[Annotated[str, Check(_not_a_host)], ...],
    Must("be a list of host names like docs.python.org or *.example.com"),
]


@settings
class WebSettings:
    """`web:`: hosts web_fetch may reach though private (`allow`), and never (`deny`, G3)."""

    allow: Hosts = ()
    deny: Hosts = ()


@settings
class PermissionSettings:
    """`permissions:`: allow, ask and deny rules over tool calls (agent/tools/rules.py, N3)."""

    allow: Rules = ()
    ask: Rules = ()
    deny: Rules = ()

    def lists(self) -> dict[str, tuple[str, ...]]:
        """The three lists by decision (`allow`, `ask`, `deny`)."""
        return {"allow": self.allow, "ask": self.ask, "deny": self.deny}


@settings
class SandboxSettings:
    """`sandbox:`: a mode (auto, the default; on; off), or a mapping that adds to (`hide`) and
    takes from (`allow_read`) the places sandboxed commands do not see (agent/tools/hiding.py)."""

    mode: Annotated[SandboxMode, Before(_on_off)] = SandboxMode.AUTO
    hide: Places = ()
    allow_read: Places = ()


def _named(providers: Any) -> Any:
    """Each provider entry knows its name (the key it is under); lines are kept."""
    if not isinstance(providers, dict):
        return providers
    named = {
        name: LineMapping({**entry, "name": name}, getattr(entry, "lines", {}))
        if isinstance(entry, dict) and "name" not in entry
        else entry
        for name, entry in providers.items()
    }
    return LineMapping(named, getattr(providers, "lines", {}))


@settings
class ConfigFile:
    """config.yaml as written: every top-level key, in docs/configuration.md's order."""

    model: Annotated[str, Must("be provider:model")] | None = None
    providers: Annotated[dict[str, ProviderConfig], Before(_named)] = field(default_factory=dict)
    agent: AgentSettings = field(default_factory=AgentSettings)
    compression: CompressionSettings = field(default_factory=CompressionSettings)
    budget: BudgetSettings = field(default_factory=BudgetSettings)
    ui: dict[str, Any] = field(default_factory=dict)  # the front end's (hermes_tui/ui_config.py)
    keys: Annotated[dict[str, Any], Must("map binding ids to keys")] = field(default_factory=dict)
    storage: StorageSettings = field(default_factory=StorageSettings)
    checkpoints: CheckpointSettings = field(default_factory=CheckpointSettings)
    sandbox: Annotated[
        SandboxSettings,
        Before(_mode_or_mapping),
        Must("be auto, on or off, or a mapping with mode, hide and allow_read"),
    ] = field(default_factory=SandboxSettings)
    tools: ToolsSettings = field(default_factory=ToolsSettings)
    permissions: PermissionSettings = field(default_factory=PermissionSettings)
    web: WebSettings = field(default_factory=WebSettings)
    hooks: HookSettings = field(default_factory=HookSettings)
    mcp: McpSettings = field(default_factory=McpSettings)
    mcp_servers: Annotated[dict[str, Any], Must("map server names to their settings")] = field(
        default_factory=dict
    )
    """Read by agent/mcp/settings.py, as a project's .mcp.json is."""


@dataclass(frozen=True)
class Config:
    """The whole configuration: where files live, providers, and the settings sections."""

    home: Path
    model: str
    providers: dict[str, ProviderConfig]
    agent: AgentSettings = field(default_factory=AgentSettings)
    compression: CompressionSettings = field(default_factory=CompressionSettings)
    budget: BudgetSettings = field(default_factory=BudgetSettings)
    storage: StorageSettings = field(default_factory=StorageSettings)
    checkpoints: CheckpointSettings = field(default_factory=CheckpointSettings)
    demo: bool = False
    sandbox: SandboxMode = SandboxMode.AUTO
    sandbox_hide: tuple[str, ...] = ()
    """`sandbox.hide`: places commands do not see, besides agent/tools/hiding.py's list."""
    sandbox_allow_read: tuple[str, ...] = ()
    """`sandbox.allow_read`: hidden places commands may read after all (never the app's home)."""
    shell: ShellSettings = field(default_factory=ShellSettings)
    permissions: PermissionSettings = field(default_factory=PermissionSettings)
    """`permissions:`: the user's allow, ask and deny rules (a project's are in the home)."""
    web: WebSettings = field(default_factory=WebSettings)
    """`web:`: the hosts web_fetch may reach though private, and those it never reaches."""
    hooks: HookSettings = field(default_factory=HookSettings)
    """`hooks:`: the user's commands by event (N4; a project's need consent, agent/hooks/)."""
    mcp: McpSettings = field(default_factory=McpSettings)
    mcp_servers: dict[str, McpServerConfig] = field(default_factory=dict)
    """The user's MCP servers (`mcp_servers:`); a project's .mcp.json is read per workspace."""
    ui: Mapping[str, Any] = field(default_factory=dict)
    """`ui:` as the file has it (lines kept), for the front end to check and read."""
    keys: Mapping[str, Any] = field(default_factory=dict)
    """`keys:` as the file has it (lines kept), for the front end to check and read."""
    checked_file: CheckedFile | None = field(default=None, compare=False, repr=False)
    """The file's cache, where the front end keeps its checked sections too."""

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


def split_model_ref(ref: str) -> tuple[str, str]:
    """ "provider:model" -> (provider, model); raises ConfigError when malformed."""
    provider, sep, model = ref.partition(":")
    if not sep or not provider or not model:
        raise ConfigError(f"Model {ref!r} must look like provider:model, e.g. openai:gpt-4.1.")
    return provider, model


def _env_providers(existing: dict[str, ProviderConfig]) -> dict[str, ProviderConfig]:
    """Providers implied by the environment when the config does not name them."""
    out = dict(existing)
    if "openai" not in out and os.environ.get("OPENAI_API_KEY"):
        out["openai"] = ProviderConfig(
            name="openai",
            kind=ProviderKind.OPENAI,
            base_url=os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1",
            api_key_env="OPENAI_API_KEY",
        )
    if "anthropic" not in out and os.environ.get("ANTHROPIC_API_KEY"):
        out["anthropic"] = ProviderConfig(
            name="anthropic", kind=ProviderKind.ANTHROPIC, api_key_env="ANTHROPIC_API_KEY"
        )
    if "openrouter" not in out and os.environ.get("OPENROUTER_API_KEY"):
        out["openrouter"] = ProviderConfig(
            name="openrouter",
            kind=ProviderKind.OPENAI,
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
    raw, file, checked_file = _read_file(path, home)
    providers = _env_providers(file.providers)
    model = _configured_model(path, raw, file.model, providers)
    is_demo = demo or model is None or split_model_ref(model)[0] == DEMO_PROVIDER
    if is_demo or model is None:  # (no model is a demo: said again for the type checker)
        providers = {**providers, DEMO_PROVIDER: ProviderConfig(name=DEMO_PROVIDER, api_key="demo")}
        model = f"{DEMO_PROVIDER}:{DEMO_MODEL}"
    else:
        _refuse_unsendable_key(providers[split_model_ref(model)[0]])
    return Config(
        home=home,
        model=model,
        providers=providers,
        agent=file.agent,
        compression=file.compression,
        budget=file.budget,
        storage=file.storage,
        checkpoints=file.checkpoints,
        demo=is_demo,
        sandbox=file.sandbox.mode,
        sandbox_hide=_trimmed(file.sandbox.hide),
        sandbox_allow_read=_trimmed(_allowed_reads(path, raw, file.sandbox, home)),
        shell=file.tools.shell,
        permissions=file.permissions,
        web=file.web,
        hooks=file.hooks,
        mcp=file.mcp,
        mcp_servers=_mcp_servers(path, raw),
        ui=raw.get("ui") or {},
        keys=raw.get("keys") or {},
        checked_file=checked_file,
    )


def _read_file(path: Path, home: Path) -> tuple[dict[str, Any], ConfigFile, CheckedFile | None]:
    """The file's YAML tree (lines kept), its sections checked, and its cache: when this very
    file was checked before (agent/config_cache.py), pydantic and PyYAML stay unloaded."""
    source = read_source(path)
    if source is None:  # a first start, the demo: the defaults, without loading the checker
        return {}, ConfigFile(), None
    cache = CheckedFile.read(config_cache_path(home), cache_key(source))
    file = cache.get("file", ConfigFile)
    if file is not None:
        raw = cache.tree()
        return (parse_yaml(path, source) if raw is None else raw), file, cache
    raw = parse_yaml(path, source)
    file = checked(ConfigFile, raw, path=path) if raw else ConfigFile()
    _refuse_written_names(path, raw)
    cache = CheckedFile(cache.cache, cache.key)  # what the file said before is dropped
    cache.put("file", ConfigFile, file, raw=raw)  # only a file that passed is stored
    return raw, file, cache


def _refuse_written_names(path: Path, raw: dict[str, Any]) -> None:
    """A provider's name is the key it is under: `providers.NAME.name` is not a setting."""
    for name, entry in (raw.get("providers") or {}).items():
        if isinstance(entry, dict) and "name" in entry:
            known = ", ".join(f for f in ProviderConfig.__dataclass_fields__ if f != "name")
            raise ConfigError(
                f"{where(path, raw, ('providers', name, 'name'))}: unknown key "
                f"`providers.{name}.name` (known: {known})."
            )


def _refuse_unsendable_key(provider: ProviderConfig) -> None:
    """Before anything is sent or stored: a key from the environment that cannot go into a
    header is a sentence naming the variable, not an error deep in the HTTP client."""
    problem = unsendable_key(provider)
    if problem:
        raise ConfigError(problem)


def _trimmed(places: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(place.rstrip("/") or place for place in places)


def _allowed_reads(
    path: Path, raw: dict[str, Any], sandbox: SandboxSettings, home: Path
) -> tuple[str, ...]:
    """`sandbox.allow_read`, none of it in the app's own home (H9)."""
    own = Path(os.path.realpath(home.expanduser()))
    for place in sandbox.allow_read:
        real = Path(os.path.realpath(Path(place).expanduser()))
        if real == own or real.is_relative_to(own):
            raise ConfigError(
                f"{where(path, raw, ('sandbox', 'allow_read'))}: `sandbox.allow_read` lists "
                f"{place}, which is in the app's own home; the sandbox always hides it from "
                "commands."
            )
    return sandbox.allow_read


def _mcp_servers(path: Path, raw: dict[str, Any]) -> dict[str, McpServerConfig]:
    """`mcp_servers:`: the user's MCP servers, each checked (a mistake names its line)."""
    body = raw.get("mcp_servers") or {}
    out: dict[str, McpServerConfig] = {}
    for name, entry in body.items():
        try:
            out[str(name)] = parse_server(name, entry, origin="config", source=str(path))
        except McpConfigProblem as exc:
            keys = (
                [k for k in entry if f"`{name}.{k}" in str(exc)] if isinstance(entry, dict) else []
            )
            loc = ("mcp_servers", name, *keys[:1])
            raise ConfigError(f"{where(path, raw, loc)}: mcp_servers: {exc}.") from None
    return out


def _configured_model(
    path: Path, raw: dict[str, Any], model: str | None, providers: dict[str, ProviderConfig]
) -> str | None:
    """The `model:` setting, checked to name a configured provider (else the default)."""
    if not model:
        return _default_model(providers)
    here = where(path, raw, ("model",))
    try:
        provider_name, _ = split_model_ref(model)
    except ConfigError as exc:
        raise ConfigError(f"{here}: {exc}") from None
    if provider_name not in providers and provider_name != DEMO_PROVIDER:
        unset = unset_env_key(provider_name)
        if unset:
            raise ConfigError(f"{here}: {unset}")
        known = ", ".join(sorted(providers)) or "none"
        raise ConfigError(
            f"{here}: `model` names provider {provider_name!r}, which is not configured "
            f"(configured: {known})."
        )
    return model


def _default_model(providers: dict[str, ProviderConfig]) -> str | None:
    """Without `model:`, the first usable provider's (else the first provider's, whose
    missing key is then the sentence the user sees); None without providers (the demo)."""
    usable = {n for n, p in providers.items() if p.resolved_key() or p.is_local}
    chosen = next((m for name, m in _ENV_DEFAULT_MODELS if name in usable), None)
    candidates = sorted(usable) or sorted(providers)
    return chosen or (f"{candidates[0]}:default" if candidates else None)

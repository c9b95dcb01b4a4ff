"""The script format of the scripted model server, and reply selection per request."""

from __future__ import annotations

import dataclasses
import json
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from agent import outside_json
from agent.scripted.personas import Persona
from agent.scripted.wire_raw import check_pieces

KNOBS = (
    "chunk_size",
    "delay",
    "stall",
    "stall_after",
    "drop_after",
    "omit_finish",
    "malformed_after",
    "gate",
    "gate_after",
)
MATCH_KEYS = (
    "last_role",
    "last_user_contains",
    "any_contains",
    "wire",
    "model",
    "has_tools",
    "system_contains",
)
EXHAUSTED_MESSAGE = "scripted server: script exhausted"
_DEFAULT_CHUNK_SIZE = 12
CHARS_PER_TOKEN = 4
"""How the scripted server counts tokens (its usage and `honour_max_tokens`)."""


@dataclass(frozen=True)
class ToolCall:
    """One scripted tool call; `arguments` is a dict or a raw (possibly invalid) JSON string."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    @property
    def arguments_json(self) -> str:
        """The arguments as the JSON text sent on the wire."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)

    @property
    def arguments_object(self) -> Any:
        """The arguments as an object (raw strings are parsed when they can be)."""
        if isinstance(self.arguments, str):
            try:
                return outside_json.loads(self.arguments)
            except ValueError:
                return self.arguments
        return self.arguments


@dataclass(frozen=True)
class Reply:
    """One scripted model reply: content parts, an optional match rule and streaming knobs."""

    reasoning: str | None = None
    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    usage: dict[str, float] | None = None  # token counts, and `cost` (USD) on the OpenAI wire
    match: dict[str, Any] | None = None
    echo: bool = False
    signature: str | None = None
    # knobs (None: take the script default)
    chunk_size: int | None = None
    delay: float | None = None
    stall: float | None = None
    stall_after: int | None = None
    drop_after: int | None = None
    omit_finish: bool | None = None
    malformed_after: int | None = None
    gate: str | None = None
    gate_after: int | None = None
    # HTTP error instead of a stream
    status: int | None = None
    error_message: str | None = None
    error_type: str | None = None
    error_code: str | None = None
    retry_after: float | None = None
    error_body: dict[str, Any] | None = None
    server_error: str | None = None
    """The persona's own error body by name (`context_overflow`, `model_not_found`)."""
    # Hostile streams: these pieces are the whole streamed body, verbatim (see wire_raw)
    raw_sse: tuple[str | dict[str, Any], ...] | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Reply:
        """Build a reply from its YAML/dict form, rejecting unknown keys."""
        if not isinstance(data, dict):
            raise ValueError(f"a reply must be a mapping, got {data!r}")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown reply keys: {sorted(unknown)}")
        kwargs = dict(data)
        calls = []
        for raw in data.get("tool_calls") or ():
            if isinstance(raw, ToolCall):
                calls.append(raw)
                continue
            extra = set(raw) - {"id", "name", "arguments"}
            if extra or "name" not in raw:
                raise ValueError(f"bad tool call {raw!r}: needs name, may have id and arguments")
            args = raw.get("arguments", {})
            if args is None:
                args = {}
            calls.append(ToolCall(name=raw["name"], arguments=args, id=raw.get("id")))
        kwargs["tool_calls"] = tuple(calls)
        if data.get("raw_sse") is not None:
            kwargs["raw_sse"] = check_pieces(data["raw_sse"])
        match = data.get("match")
        if match is not None:
            if not isinstance(match, dict):
                raise ValueError(f"match must be a mapping, got {match!r}")
            bad = set(match) - set(MATCH_KEYS)
            if bad:
                raise ValueError(f"unknown match keys: {sorted(bad)}")
        return cls(**kwargs)

    def matches(self, request: RequestInfo) -> bool:
        """Whether every key of this reply's match rule holds for the request."""
        rule = self.match or {}
        for key, want in rule.items():
            if key == "last_role":
                ok = request.last_role == want
            elif key == "last_user_contains":
                ok = str(want) in request.last_user_text
            elif key == "any_contains":
                ok = str(want) in request.raw_text or str(want) in request.body_text
            elif key == "wire":
                ok = request.wire == want
            elif key == "model":
                ok = request.model == want
            elif key == "has_tools":
                ok = request.has_tools == bool(want)
            elif key == "system_contains":
                ok = str(want) in request.system_text
            else:  # pragma: no cover - rejected at load time
                ok = False
            if not ok:
                return False
        return True


@dataclass
class Script:
    """An ordered list of replies plus defaults, loop mode and the reasoning key.

    `honour_max_tokens`: play a real server's output limit. A reply longer than the
    request's `max_tokens` (reasoning first, then text, then tool calls; 4 characters a
    token) is cut there and finishes with `length`, as llama.cpp or vLLM would.
    """

    replies: list[Reply] = field(default_factory=list)
    loop: bool = False
    defaults: dict[str, Any] = field(default_factory=dict)
    reasoning_key: str = "reasoning_content"
    honour_max_tokens: bool = False
    server: Persona = field(default_factory=Persona)
    """The server played: its discovery endpoints, models, window and error bodies."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Script:
        """Build a script from its dict form (as parsed from YAML)."""
        if not isinstance(data, dict):
            raise ValueError("a script must be a mapping with a `replies` list")
        keys = {"replies", "loop", "defaults", "reasoning_key", "honour_max_tokens", "server"}
        unknown = set(data) - keys
        if unknown:
            raise ValueError(f"unknown script keys: {sorted(unknown)}")
        defaults = dict(data.get("defaults") or {})
        bad = set(defaults) - set(KNOBS)
        if bad:
            raise ValueError(f"unknown defaults keys: {sorted(bad)}")
        reasoning_key = data.get("reasoning_key", "reasoning_content")
        if reasoning_key not in ("reasoning_content", "reasoning"):
            raise ValueError("reasoning_key must be 'reasoning_content' or 'reasoning'")
        replies = [r if isinstance(r, Reply) else Reply.from_dict(r) for r in data["replies"]]
        server = data.get("server")
        return cls(
            replies=replies,
            loop=bool(data.get("loop", False)),
            defaults=defaults,
            reasoning_key=reasoning_key,
            honour_max_tokens=bool(data.get("honour_max_tokens", False)),
            server=Persona() if server is None else Persona.from_dict(server),
        )

    @classmethod
    def from_yaml(cls, path: str | Path) -> Script:
        """Load a script from a YAML file."""
        return cls.from_yaml_text(Path(path).read_text(encoding="utf-8"))

    @classmethod
    def from_yaml_text(cls, text: str) -> Script:
        """Load a script from YAML text."""
        return cls.from_dict(yaml.safe_load(text))

    @classmethod
    def load_demo(cls) -> Script:
        """Load the tour the demo model plays (agent/scripted/demo.yaml)."""
        text = resources.files("agent.scripted").joinpath("demo.yaml").read_text("utf-8")
        return cls.from_yaml_text(text)


def _text_of(content: Any) -> str:
    """The text parts of a message content (a string or a list of blocks/parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") in ("text", "input_text"):
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return ""


@dataclass(frozen=True)
class RequestInfo:
    """What the selection rules look at in a request, wire-independent."""

    wire: str
    model: str = ""
    last_role: str = ""
    last_user_text: str = ""
    system_text: str = ""
    has_tools: bool = False
    raw_text: str = ""
    body_text: str = ""
    stream: bool = False
    include_usage: bool = False
    max_tokens: int | None = None

    @classmethod
    def from_body(cls, wire: str, body: dict[str, Any] | None, raw: bytes = b"") -> RequestInfo:
        """Extract the rule inputs from a parsed request body of the given wire."""
        body = body if isinstance(body, dict) else {}
        messages = body.get("messages") or []
        messages = [m for m in messages if isinstance(m, dict)]
        if wire == "anthropic":
            last_role, last_user, system_parts = _anthropic_view(body, messages)
        else:
            last_role, last_user, system_parts = _openai_view(messages)
        try:
            raw_text = raw.decode("utf-8", errors="replace")
        except AttributeError:
            raw_text = str(raw)
        stream_options = body.get("stream_options") or {}
        limit = body.get("max_tokens") or body.get("max_completion_tokens")
        return cls(
            wire=wire,
            model=str(body.get("model", "")),
            last_role=last_role,
            last_user_text=last_user,
            system_text="\n".join(p for p in system_parts if p),
            has_tools=bool(body.get("tools")),
            raw_text=raw_text,
            body_text=json.dumps(body, ensure_ascii=False),
            stream=body.get("stream") is True,
            include_usage=bool(
                isinstance(stream_options, dict) and stream_options.get("include_usage")
            ),
            max_tokens=limit if isinstance(limit, int) and limit > 0 else None,
        )


def _anthropic_view(
    body: dict[str, Any], messages: list[dict[str, Any]]
) -> tuple[str, str, list[str]]:
    """(last role, last user text, system texts) of a messages-API body; a user turn that
    only carries tool results counts as a `tool` turn."""
    last_role = last_user = ""
    if messages:
        last = messages[-1]
        last_role = str(last.get("role", ""))
        if last_role == "user" and _has_tool_result(last.get("content")):
            last_role = "tool"
    for m in reversed(messages):
        if m.get("role") == "user":
            text = _text_of(m.get("content"))
            if text or not _has_tool_result(m.get("content")):
                last_user = text
                break
    return last_role, last_user, [_text_of(body.get("system"))]


def _openai_view(messages: list[dict[str, Any]]) -> tuple[str, str, list[str]]:
    """(last role, last user text, system texts) of a chat-completions body."""
    system_parts = [
        _text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
    ]
    last_role = str(messages[-1].get("role", "")) if messages else ""
    last_user = next(
        (_text_of(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), ""
    )
    return last_role, last_user, system_parts


def _has_tool_result(content: Any) -> bool:
    """Whether an anthropic user content holds a tool_result block."""
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


class ScriptPlayer:
    """Thread-safe reply selection: consumption of ordered replies, looping, `{n}` ids."""

    def __init__(self, script: Script) -> None:
        """Start playing `script` from the top."""
        self._lock = threading.Lock()
        self._script = script
        self._consumed: set[int] = set()
        self._counter = 0

    @property
    def script(self) -> Script:
        """The script being played."""
        return self._script

    def set_script(self, script: Script) -> None:
        """Replace the script and reset consumption (the `{n}` counter keeps counting)."""
        with self._lock:
            self._script = script
            self._consumed = set()

    def reset(self) -> None:
        """Forget which ordered replies were used."""
        with self._lock:
            self._consumed = set()

    def pick(self, request: RequestInfo) -> Reply | None:
        """The resolved reply for this request, or None when the script is exhausted."""
        with self._lock:
            index = self._find(request)
            if index is None and self._script.loop:
                self._consumed = set()
                index = self._find(request)
            if index is None:
                return None
            reply = self._script.replies[index]
            if reply.match is None:
                self._consumed.add(index)
            return self._resolve(reply, request)

    def _find(self, request: RequestInfo) -> int | None:
        """Index of the first eligible reply."""
        for i, reply in enumerate(self._script.replies):
            if reply.match is None:
                if i not in self._consumed:
                    return i
            elif reply.matches(request):
                return i
        return None

    def _resolve(self, reply: Reply, request: RequestInfo) -> Reply:
        """Apply defaults, echo and `{n}` placeholders (called under the lock)."""
        changes: dict[str, Any] = {}
        for knob, value in self._script.defaults.items():
            if getattr(reply, knob) is None:
                changes[knob] = value
        if reply.chunk_size is None and "chunk_size" not in changes:
            changes["chunk_size"] = _DEFAULT_CHUNK_SIZE
        if reply.echo:
            changes["text"] = f"echo: {request.last_user_text}"
        if reply.tool_calls:
            calls = []
            for call in reply.tool_calls:
                if call.id is not None and "{n}" in call.id:
                    self._counter += 1
                    call = dataclasses.replace(call, id=call.id.replace("{n}", str(self._counter)))
                calls.append(call)
            changes["tool_calls"] = tuple(calls)
        reply = dataclasses.replace(reply, **changes) if changes else reply
        if self._script.honour_max_tokens and request.max_tokens:
            reply = cut_to_limit(reply, request.max_tokens * CHARS_PER_TOKEN)
        return reply


def cut_to_limit(reply: Reply, chars: int) -> Reply:
    """The reply a server with an output limit of `chars` characters sends: reasoning, then
    text, cut where the limit falls (then no tool calls), finishing with `length`."""
    reasoning, text = reply.reasoning or "", reply.text or ""
    calls = sum(len(c.name) + len(c.arguments_json) for c in reply.tool_calls)
    if len(reasoning) + len(text) + calls <= chars:
        return reply
    kept_reasoning = reasoning[:chars]
    kept_text = text[: max(0, chars - len(kept_reasoning))]
    return dataclasses.replace(
        reply,
        reasoning=kept_reasoning or None,
        text=kept_text or None,
        tool_calls=(),
        finish_reason="length",
    )

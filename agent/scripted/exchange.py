"""One request to the scripted model, answered apart from any socket: status, headers, body.

The HTTP server writes an `Answer` to its connection; the in-process transport hands it to
httpx2 as a response. Both play the same script through the same routes and knobs, so a
test that is not about the wire sees the same bytes either way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent.scripted import wire_anthropic, wire_openai, wire_raw
from agent.scripted.images import SeenImage, image_parts
from agent.scripted.personas import ANTHROPIC, OPENAI
from agent.scripted.script import EXHAUSTED_MESSAGE, Reply, RequestInfo

if TYPE_CHECKING:
    from agent.scripted.server import ScriptedServer

OPENAI_PATHS = ("/v1/chat/completions", "/chat/completions")
ANTHROPIC_PATHS = ("/v1/messages", "/messages")
COUNT_TOKENS_PATHS = ("/v1/messages/count_tokens", "/messages/count_tokens")
DISCOVERY_PATHS = frozenset({"/api/show", "/api/tags", "/props", "/api/v0/models", "/v1/models"})
"""Where clients ask a server what it serves: recorded in `probes`, never in `requests`."""
# POST here opens a gate from outside the process (a test driving `hermes-tui
# scripted-server` in its own process); it is not recorded as a model request.
OPEN_GATE_PREFIX = "/_control/open_gate/"
REQUESTS_PATH = "/_control/requests"
"""GET here lists the model requests' bodies so far (a test reading another process's log)."""
EPOCH_PREFIX = "/_epoch/"
"""A reset server's URLs start /_epoch/N/: a client of an earlier script (a test's leftover
worker) is told its script is gone instead of playing the next test's replies."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received, as it arrived."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    raw: bytes
    wire: str

    @property
    def images(self) -> list[SeenImage]:
        """The image parts the request carried (G4), decoded."""
        return image_parts(self.body, self.wire)


class Dropped(Exception):
    """The reply ends by hanging up (`drop_after`, or a stop or reset during a wait)."""


@dataclass
class Answer:
    """What the server sends back: a whole body, or chunks pulled one at a time.

    `hold` runs before the status line (a non-streamed reply's gate or stall); pulling
    `chunks` applies a streamed reply's knobs between chunks. Either may raise `Dropped`.
    """

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunks: Iterator[bytes] | None = None
    hold: Callable[[], None] | None = None
    close: bool = False


def json_answer(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Answer:
    """A complete JSON response."""
    return Answer(
        status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(body).encode()
    )


def body_answer(status: int, body: dict[str, Any] | str) -> Answer:
    """A JSON body, or a plain-text one."""
    if isinstance(body, dict):
        return json_answer(status, body)
    return Answer(status, {"Content-Type": "text/plain"}, body.encode())


def wire_of(path: str) -> str:
    """Which wire a path belongs to."""
    return "anthropic" if path.startswith(("/v1/messages", "/messages")) else "openai"


class Exchange:
    """Answers one request for `owner`; `stopped` says when its client or server went away."""

    def __init__(self, owner: ScriptedServer, stopped: Callable[[], bool]) -> None:
        self.owner = owner
        self.stopped = stopped

    # -- knobs -----------------------------------------------------------------------------

    def _wait(self, seconds: float) -> None:
        """Wait, interruptibly by a stop or hang-up (which drops the reply)."""
        if seconds and seconds > 0 and self.owner.wait_until(self.stopped, seconds):
            raise Dropped

    def _at_gate(self, name: str) -> None:
        """Wait until gate `name` opens; a stop or hang-up meanwhile drops the reply."""
        self.owner.wait_gate(name, self.stopped)
        if self.stopped():
            raise Dropped

    def _knobs_at(self, reply: Reply, sent: int) -> None:
        """Apply gate, stall and drop knobs before chunk number `sent`."""
        if reply.gate is not None and sent == (reply.gate_after or 0):
            self._at_gate(reply.gate)
        if reply.stall and sent == (reply.stall_after or 0):
            self._wait(reply.stall)
        if reply.drop_after is not None and sent == reply.drop_after:
            raise Dropped

    def _before_body(self, reply: Reply) -> None:
        """Knobs for non-streaming replies: gate, stall and drop act before the body."""
        if reply.gate is not None:
            self._at_gate(reply.gate)
        if reply.stall:
            self._wait(reply.stall)
        if reply.drop_after is not None:
            raise Dropped

    def _chunks(self, reply: Reply, events: Iterator[bytes], wire: str) -> Iterator[bytes]:
        """The streamed body's chunks, the reply's knobs applied as they are pulled."""
        delay = reply.delay or 0.0
        knobs = bool(
            reply.gate is not None
            or reply.stall
            or reply.drop_after is not None
            or reply.malformed_after is not None
        )
        malformed = (
            wire_anthropic.MALFORMED_CHUNK if wire == "anthropic" else wire_openai.MALFORMED_CHUNK
        )
        sent = 0
        for event in events:
            if knobs:
                self._knobs_at(reply, sent)
                if reply.malformed_after is not None and sent == reply.malformed_after:
                    yield malformed
            if delay and sent:
                self._wait(delay)
            yield event
            sent += 1
        if knobs:
            self._knobs_at(reply, sent)

    def _stream(self, reply: Reply, events: Iterator[bytes], wire: str) -> Answer:
        """A chunked SSE response playing `events` with the reply's knobs."""
        rid = f"req_scripted_{self.owner.next_id()}"
        headers = {
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "request-id" if wire == "anthropic" else "x-request-id": rid,
        }
        return Answer(200, headers, chunks=self._chunks(reply, events, wire))

    def _error(self, wire: str, status: int, reply: Reply | None, message: str) -> Answer:
        """A provider-shaped error response."""
        if reply is not None and reply.error_body is not None:
            body = reply.error_body
        elif wire == "anthropic":
            body = wire_anthropic.error_body(status, message, reply.error_type if reply else None)
        else:
            body = wire_openai.error_body(
                status,
                message,
                reply.error_type if reply else None,
                reply.error_code if reply else None,
            )
        headers = {}
        if reply is not None and reply.retry_after is not None:
            value = reply.retry_after
            headers["Retry-After"] = str(int(value)) if float(value).is_integer() else str(value)
        rid = f"req_scripted_{self.owner.next_id()}"
        headers["request-id" if wire == "anthropic" else "x-request-id"] = rid
        return json_answer(status, body, headers)

    # -- routes ----------------------------------------------------------------------------

    def answer(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> Answer:
        """The answer to `method target` (headers lower-cased, `raw` the body)."""
        target, refused = self._in_epoch(target)
        if refused is not None:
            return refused
        path = target.split("?", 1)[0]
        if method == "GET":
            return self._get(path, target, headers)
        if method != "POST":
            return self._error(wire_of(path), 501, None, f"scripted server: no {method}")
        gate = path.removeprefix(OPEN_GATE_PREFIX)
        if gate and gate != path:
            self.owner.open_gate(gate)
            return json_answer(200, {"opened": gate})
        wire = wire_of(path)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        persona = self.owner.script.server
        recorded = RecordedRequest("POST", target, headers, body, raw, wire)
        discovery = persona.post(path, body)
        self.owner.record(recorded, probe=discovery is not None or path in DISCOVERY_PATHS)
        if discovery is not None:
            return body_answer(*discovery)
        if raw and body is None:
            return self._error(wire, 400, None, "scripted server: request body is not JSON")
        if path in COUNT_TOKENS_PATHS:
            return json_answer(200, {"input_tokens": max(1, len(raw) // 4)})
        if path not in OPENAI_PATHS and path not in ANTHROPIC_PATHS:
            return self._no_route(path, "POST")
        return self._model_call(wire, body, raw)

    def _in_epoch(self, target: str) -> tuple[str, Answer | None]:
        """`target` without a reset server's /_epoch/N prefix, or a 410 when N is an earlier
        script's."""
        if not target.startswith(EPOCH_PREFIX):
            return target, None
        epoch, _, rest = target[len(EPOCH_PREFIX) :].partition("/")
        if epoch != str(self.owner.epoch):
            refused = json_answer(410, {"error": {"message": "scripted server: script replaced"}})
            refused.close = True
            return target, refused
        return "/" + rest, None

    def _get(self, path: str, target: str, headers: dict[str, str]) -> Answer:
        """Health, the request log, and the discovery endpoints of the server the script plays."""
        if path == REQUESTS_PATH:
            return json_answer(200, {"requests": [r.body for r in self.owner.requests]})
        get = RecordedRequest("GET", target, headers, None, b"", wire_of(path))
        self.owner.record(get, probe=True)
        found = self.owner.script.server.get(path)
        if found is not None:
            return body_answer(*found)
        if path in ("/", "/health"):
            return json_answer(200, {"status": "ok"})
        return self._no_route(path, "GET")

    def _no_route(self, path: str, method: str) -> Answer:
        """A path this server does not serve: the persona's own 404, else a generic one."""
        found = self.owner.script.server.not_found(path, method)
        if found is not None:
            return body_answer(*found)
        return self._error(wire_of(path), 404, None, f"scripted server: no route {path}")

    def _model_call(self, wire: str, body: Any, raw: bytes) -> Answer:
        """A chat completion or a message: the script's next reply, an error, or raw bytes."""
        persona = self.owner.script.server
        info = RequestInfo.from_body(wire, body, raw)
        reply = self.owner.pick(info)
        if reply is None:
            return self._error(wire, 500, None, EXHAUSTED_MESSAGE)
        if reply.server_error is not None:
            status, error = persona.error(reply.server_error, info.model, max(1, len(raw) // 4))
            return body_answer(status, error)
        if reply.status is not None and reply.status >= 400:
            message = reply.error_message or f"scripted server: HTTP {reply.status}"
            answer = self._error(wire, reply.status, reply, message)
            if reply.gate is not None:
                # An error can wait at a gate too (held mid-request).
                answer.hold = lambda: self._before_body(reply)
            return answer
        if reply.raw_sse is not None:
            return self._stream(reply, wire_raw.raw_chunks(reply.raw_sse), wire)
        if persona.name == {"anthropic": ANTHROPIC, "openai": OPENAI}[wire] and isinstance(
            body, dict
        ):
            reply = self.owner.cached_usage(reply, body, wire)
        return self._reply(reply, info, wire)

    def _reply(self, reply: Reply, info: RequestInfo, wire: str) -> Answer:
        """A scripted answer (streamed or whole) on `wire`."""
        rid = self.owner.next_id()
        if wire == "anthropic":
            msg_id = f"msg_scripted_{rid}"
            if info.stream:
                return self._stream(reply, wire_anthropic.stream_events(reply, info, msg_id), wire)
            answer = json_answer(200, wire_anthropic.message_body(reply, info, msg_id))
        else:
            key = self.owner.script.reasoning_key
            cid = f"chatcmpl-scripted-{rid}"
            if info.stream:
                return self._stream(reply, wire_openai.stream_events(reply, info, cid, key), wire)
            answer = json_answer(200, wire_openai.completion_body(reply, info, cid, key))
        answer.hold = lambda: self._before_body(reply)
        return answer

"""The shared request path of both wires: SDK client slot, error translation, SSE, abort."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any

from agent.config import ProviderConfig
from agent.credentials import safe_url, url_secrets
from agent.kinds import ErrorKind
from agent.providers.base import Abort, ChatRequest, PartStream, StreamPart, ToolCallPart
from agent.providers.bounds import ToolCallBounds
from agent.providers.credentials import Credential, CredentialPool
from agent.providers.errors import (
    ProviderError,
    classify_status,
    connection_error,
    dropped_error,
    error_body,
    install_log_redaction,
    parse_retry_after,
    redact,
    register_secret,
)
from agent.providers.sse import SSELimitError, iter_sse
from agent.providers.wire import ClientSlot, abandon, build_http_client
from agent.version import USER_AGENT

log = logging.getLogger("hermes_tui.providers")


class SDKCall:
    """Base of a wire adapter: the SDK builds and sends the request; we parse the stream.

    The SDK gives us auth, request building and typed HTTP errors; the stream itself is read
    line by line here, so a truncated stream (no finish reason) or a chunk that does not
    parse is caught (W10, W11) instead of being accepted silently. The SDK client comes from
    the adapter's `ClientSlot` (W1-W6); the key from its `CredentialPool` (K1).
    """

    wire = "base"
    _model = ""  # the model of the request in flight, for error messages

    def __init__(self, config: ProviderConfig, *, api_key: str, idle_timeout: float) -> None:
        self.config = config
        self.name = config.name
        self.idle_timeout = idle_timeout
        self.pool = CredentialPool.from_config(config, fallback=api_key)
        # Every later redaction (errors, logs) removes these; `api_key` is one of the pool's.
        register_secret(*self.pool.secrets, *url_secrets(config.base_url))
        install_log_redaction()
        self.slot = ClientSlot(f"{config.name}/{self.wire}", self._build_client)
        # W9: one cumulative deadline for a call's retries after a stall (monotonic), or None.
        self.call_deadline: float | None = None

    @property
    def api_key(self) -> str:
        """The key the next request will be issued with."""
        return self.pool.current().key

    # -- client ---------------------------------------------------------------------------
    def client_kwargs(self, api_key: str, request: ChatRequest | None = None) -> dict[str, Any]:
        """The effective client arguments (the slot's cache key): key, URL, headers, timeouts.

        The key is the one of the pool entry charged for the request (K1). SDK retries are
        off (W8): the agent retries.
        """
        import httpx2

        headers = {"User-Agent": USER_AGENT, **self.config.headers}
        if request is not None and request.headers:
            headers.update(request.headers)
        kwargs: dict[str, Any] = {
            "api_key": api_key,
            "max_retries": 0,
            "default_headers": headers,
            "timeout": httpx2.Timeout(
                self.config.timeout_seconds, connect=15.0, read=self.idle_timeout
            ),
        }
        if self.config.base_url:
            kwargs["base_url"] = self.config.base_url
        if self.config.ca_file:
            kwargs["ca_file"] = self.config.ca_file
        return kwargs

    def http_client(self, kwargs: dict[str, Any]) -> Any:
        """The httpx2 client under a new SDK client: draining transports, shared TLS context."""
        return build_http_client(timeout=kwargs["timeout"], ca_file=kwargs.get("ca_file"))

    def sdk_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The SDK constructor arguments for the effective client arguments."""
        out = {k: v for k, v in kwargs.items() if k != "ca_file"}
        out["http_client"] = self.http_client(kwargs)
        return out

    def close(self) -> None:
        """Close the slot's client (or, when a request has it, abort and detach it) (W6)."""
        self.slot.close("close")  # pragma: no mutate (the reason is only logged)

    def _build_client(self, kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _sdk_errors(self) -> tuple[Any, Any, Any]:
        raise NotImplementedError

    def _open(self, client: Any, request: ChatRequest, options: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _parse(self, events: Iterator[tuple[str, str]]) -> Iterator[StreamPart]:
        raise NotImplementedError

    # -- errors ---------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        """Where requests go, for error messages: without the URL's credentials (H5)."""
        return safe_url(self.config.base_url) or "the default endpoint"

    def classify(self, status: int, body: Any, retry_after: float | None) -> ProviderError:
        """An HTTP error status -> ProviderError, with keys redacted."""
        return classify_status(
            status,
            body,
            provider=self.name,
            model=self._model,
            retry_after=retry_after,
            url=self.base_url,
            kind=self.config.kind,
        )

    def decode(self, data: str) -> dict[str, Any]:
        """One SSE data payload -> JSON object, or a retryable `malformed` error (W11)."""
        try:
            obj = json.loads(data)
        except (ValueError, RecursionError):  # a chunk nested 5,000 deep is malformed too
            raise ProviderError(
                ErrorKind.MALFORMED,
                f"{self.name} sent a stream chunk that does not parse.",
                retryable=True,
                detail=redact(data[:200]),
            ) from None
        if not isinstance(obj, dict):
            raise ProviderError(
                ErrorKind.MALFORMED, f"{self.name} sent a stream chunk that is not an object.", True
            )
        return obj

    def oversized(self, what: str) -> ProviderError:
        """A reply over a bound (H6): malformed, and retried once only, as a repeat is likely."""
        return ProviderError(
            ErrorKind.MALFORMED,
            f"{self.name} sent a reply over a safety limit ({what}), so it was refused; "
            "ask again, or switch models if it keeps happening.",
            retryable=True,
            max_attempts=2,
        )

    def truncated(self) -> ProviderError:
        """A stream that ended without a finish reason (W10)."""
        return ProviderError(
            ErrorKind.TRUNCATED,
            f"{self.name} ended the stream before the answer was complete.",
            retryable=True,
        )

    # -- the call -------------------------------------------------------------------------
    def request_options(self) -> dict[str, Any]:
        """Per-request options: a read timeout cut to the cumulative stall deadline (W9)."""
        if self.call_deadline is None:
            return {}
        import httpx2

        left = max(0.05, self.call_deadline - time.monotonic())
        read = min(self.idle_timeout, left)
        return {"timeout": httpx2.Timeout(self.config.timeout_seconds, connect=15.0, read=read)}

    def stream(self, request: ChatRequest, abort: Abort) -> PartStream:
        """Send the request and yield normalised parts; stops quietly when aborted."""
        import httpx2

        self._model = request.model
        entry = self.pool.current()
        lease = self.slot.checkout(self.client_kwargs(entry.key, request))
        abort.bind(lease)
        # Any reason but a complete one closes the client; the names only reach the debug log.
        reason = "request_error_cleanup"  # pragma: no mutate
        manager: Any = None  # pragma: no mutate (None until the request is sent)
        http: Any = None  # pragma: no mutate
        try:
            if abort.fired:
                return
            opened = self._send(lease, request, entry, abort)
            if opened is None:
                return
            manager, response = opened
            http = response.http_response
            reason = "stream_error_cleanup"  # pragma: no mutate
            if abort.fired:
                # Stopped while the request was being sent (no socket to shut down yet): the
                # unread body is dropped with the response below.
                return
            if _answers_json(http):
                raise self._json_instead_of_stream(http)
            failures = (SSELimitError, ProviderError, httpx2.HTTPError, OSError)
            bounds = ToolCallBounds()
            try:
                for part in self._parse(iter_sse(http)):
                    if type(part) is ToolCallPart:
                        over = bounds.over(part)
                        if over is not None:
                            raise self.oversized(over)
                    try:
                        yield part
                    except GeneratorExit:
                        # The consumer stopped reading (an abort): drop the body, never
                        # drain it; the inner generators close after this flag is set.
                        abandon(http)
                        raise
            except failures as exc:
                if abort.fired:
                    return
                if isinstance(exc, ProviderError):
                    raise
                raise self._stream_failure(exc) from None
            reason = "stream_request_complete"
            self.pool.report_success(entry.id)
        finally:
            abort.unbind(lease)
            if manager is not None:
                self._close_response(manager, http, lease)
            lease.release(reason)

    def _send(
        self, lease: Any, request: ChatRequest, entry: Credential, abort: Abort
    ) -> tuple[Any, Any] | None:
        """Open the streamed response: (its context manager, the entered response), or None
        when a stop cut the sending short; an SDK failure becomes a ProviderError."""
        status_error, conn_error, timeout_error = self._sdk_errors()
        try:
            manager = self._open(lease.client, request, self.request_options())
            return manager, manager.__enter__()
        except status_error as exc:
            raise self._from_status_error(exc, entry) from None
        except conn_error as exc:  # the SDKs' timeout error is a connection error too
            if abort.fired:
                return None
            if isinstance(exc, timeout_error):
                raise self._timeout(exc) from None
            local = self.config.is_local
            raise connection_error(self.name, self.base_url, exc, local=local) from None

    def _stream_failure(self, exc: BaseException) -> ProviderError:
        """What a failure while reading the stream means: a bound passed, a stall, a drop."""
        import httpx2

        if isinstance(exc, SSELimitError):
            return self.oversized(str(exc))
        if isinstance(exc, httpx2.TimeoutException | TimeoutError):
            return self._timeout(exc)
        return dropped_error(self.name, exc)

    def _json_instead_of_stream(self, http: Any) -> ProviderError:
        """A 200 that is a JSON error, not a stream (LM Studio answers a wrong path so)."""
        # Read up to the bound for the message; the rest goes with the closed client (W2):
        # httpx2 closes the body as soon as the loop below lets go of it, so say so first.
        abandon(http)
        data = b""
        try:
            for chunk in http.iter_bytes():
                data += chunk
                if len(data) > JSON_REPLY_MAX_BYTES:
                    break
            body: Any = json.loads(data[:JSON_REPLY_MAX_BYTES])
        except (ValueError, RecursionError, OSError):
            body = data[:200].decode("utf-8", "replace")
        found = error_body(body)
        status = 404 if "unexpected endpoint" in found.message.lower() else 400
        if not found.message:
            body = f"the server answered JSON instead of a stream: {str(body)[:200]}"
        return self.classify(status, body, None)

    def _close_response(self, manager: Any, http: Any, lease: Any) -> None:
        """Close the response on the thread that owns it, before the caller builds a partial
        answer: an unfinished body is dropped, never drained; a close that fails poisons the
        client (W5).

        A complete stream's body is closed already, drained for keep-alive (W1): httpx2 closes
        a body once its iterator ends or is dropped, as it is when the parser returns. A body
        still open here is one an error or a stop cut short; its client is closed (W2).
        """
        abandon(http)
        try:
            manager.__exit__(None, None, None)  # pragma: no mutate (RawStreamCall: *exc_info)
        except Exception as exc:
            log.debug("closing the stream failed: %s", type(exc).__name__)
            lease.poison()

    def _timeout(self, exc: BaseException) -> ProviderError:
        return ProviderError(
            ErrorKind.TIMEOUT,
            f"{self.name} went silent for {self.idle_timeout:.0f} s.",
            retryable=True,
            detail=type(exc).__name__,
        )

    def _from_status_error(self, exc: Any, entry: Credential | None = None) -> ProviderError:
        response = getattr(exc, "response", None)
        # No status on the error (or 0): the response's, else 500.
        status: int = getattr(exc, "status_code", 0) or getattr(response, "status_code", 500)
        body = getattr(exc, "body", None)
        if body is None and response is not None:
            try:
                body = response.json()
            except Exception:
                body = getattr(response, "text", "")
        retry_after = parse_retry_after(
            response.headers.get("retry-after") if response is not None else None
        )
        error = self.classify(status, body, retry_after)
        if entry is not None and status in (401, 403, 429):
            # Charged to the entry that issued this request, wherever the pool is now (K1).
            rotated = self.pool.report_failure(entry.id, status, retry_after)
            log.info(
                "credential %s failed (HTTP %s); %s",
                entry.id,
                status,
                "rotated to the next usable key" if rotated else "no other usable key",
            )
            if rotated:
                error.rotated = True
                error.retryable = True
                error.retry_after = 0.0
                error.message += " Switched to the next key of the pool."
        return error


JSON_REPLY_MAX_BYTES = 64 * 1024
"""A JSON answer to a streamed request is read this far, for its error message."""


def _answers_json(http: Any) -> bool:
    """True when a streamed request got a JSON body (an error) instead of an event stream."""
    kind = (http.headers.get("content-type") or "").lower()
    return kind.startswith("application/json")


def merged_body(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Request kwargs as the JSON body: `extra_body` merged in at the top level."""
    body = dict(kwargs)
    extra = body.pop("extra_body", None) or {}
    body.update(extra)
    return body

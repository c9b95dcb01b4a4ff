"""The shared request path of both wires: SDK client, error translation, SSE stream, abort."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

from agent.config import ProviderConfig
from agent.providers.base import Abort, ChatRequest, StreamPart
from agent.providers.errors import (
    ProviderError,
    classify_status,
    connection_error,
    parse_retry_after,
    redact,
)
from agent.providers.sse import iter_sse
from agent.version import USER_AGENT


class SDKCall:
    """Base of a wire adapter: the SDK builds and sends the request; we parse the stream.

    The SDK gives us auth, request building and typed HTTP errors; the stream itself is read
    line by line here, so a truncated stream (no finish reason) or a chunk that does not
    parse is caught (W10, W11) instead of being accepted silently.
    """

    wire = "base"

    def __init__(self, config: ProviderConfig, *, api_key: str, idle_timeout: float) -> None:
        self.config = config
        self.name = config.name
        self.api_key = api_key
        self.idle_timeout = idle_timeout
        self._client: Any = None
        self._lock = threading.Lock()

    # -- client ---------------------------------------------------------------------------
    def client_kwargs(self) -> dict[str, Any]:
        """Arguments for the SDK client: our User-Agent, SDK retries off, timeouts."""
        import httpx2

        headers = {"User-Agent": USER_AGENT, **self.config.headers}
        kwargs: dict[str, Any] = {
            "api_key": self.api_key,
            "max_retries": 0,
            "default_headers": headers,
            "timeout": httpx2.Timeout(
                self.config.timeout_seconds, connect=15.0, read=self.idle_timeout
            ),
        }
        if self.config.base_url:
            kwargs["base_url"] = self.config.base_url
        return kwargs

    def client(self) -> Any:
        """The adapter's SDK client, built on first use (keeps start-up light)."""
        with self._lock:
            if self._client is None:
                self._client = self._build_client()
            return self._client

    def close(self) -> None:
        """Close the SDK client."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def _build_client(self) -> Any:
        raise NotImplementedError

    def _sdk_errors(self) -> tuple[Any, Any, Any]:
        raise NotImplementedError

    def _open(self, client: Any, request: ChatRequest) -> Any:
        raise NotImplementedError

    def _parse(self, events: Iterator[tuple[str, str]], abort: Abort) -> Iterator[StreamPart]:
        raise NotImplementedError

    # -- errors ---------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        """Where requests go, for error messages."""
        return self.config.base_url or "the default endpoint"

    def classify(self, status: int, body: Any, retry_after: float | None) -> ProviderError:
        """An HTTP error status -> ProviderError, with keys redacted."""
        return classify_status(
            status,
            body,
            provider=self.name,
            model="" if self._model is None else self._model,
            retry_after=retry_after,
            secrets=(self.api_key,),
        )

    def decode(self, data: str) -> dict[str, Any]:
        """One SSE data payload -> JSON object, or a retryable `malformed` error (W11)."""
        try:
            obj = json.loads(data)
        except ValueError:
            raise ProviderError(
                "malformed",
                f"{self.name} sent a stream chunk that does not parse.",
                retryable=True,
                detail=redact(data[:200], (self.api_key,)),
            ) from None
        if not isinstance(obj, dict):
            raise ProviderError(
                "malformed", f"{self.name} sent a stream chunk that is not an object.", True
            )
        return obj

    def truncated(self) -> ProviderError:
        """A stream that ended without a finish reason (W10)."""
        return ProviderError(
            "truncated",
            f"{self.name} ended the stream before the answer was complete.",
            retryable=True,
        )

    _model: str | None = None

    # -- the call -------------------------------------------------------------------------
    def stream(self, request: ChatRequest, abort: Abort) -> Iterator[StreamPart]:
        """Send the request and yield normalised parts; stops quietly when aborted."""
        import httpx2

        status_error, conn_error, timeout_error = self._sdk_errors()
        self._model = request.model
        client = self.client()
        try:
            manager = self._open(client, request)
            response = manager.__enter__()
        except status_error as exc:
            raise self._from_status_error(exc) from None
        except timeout_error as exc:
            raise self._timeout(exc) from None
        except conn_error as exc:
            if abort.fired:
                return
            raise connection_error(self.name, self.base_url, exc) from None
        http = response.http_response
        abort.attach(http)
        try:
            yield from self._parse(iter_sse(http), abort)
        except ProviderError:
            if abort.fired:
                return
            raise
        except (httpx2.TimeoutException, TimeoutError) as exc:
            if abort.fired:
                return
            raise self._timeout(exc) from None
        except (httpx2.HTTPError, OSError) as exc:
            if abort.fired:
                return
            raise connection_error(self.name, self.base_url, exc) from None
        finally:
            abort.detach()
            # Closed here, on the thread that owns the response (W4/W5).
            try:
                manager.__exit__(None, None, None)
            except Exception:
                self.close()

    def _timeout(self, exc: BaseException) -> ProviderError:
        return ProviderError(
            "timeout",
            f"{self.name} went silent for {self.idle_timeout:.0f} s.",
            retryable=True,
            detail=type(exc).__name__,
        )

    def _from_status_error(self, exc: Any) -> ProviderError:
        response = getattr(exc, "response", None)
        status = getattr(exc, "status_code", None) or getattr(response, "status_code", 500)
        body = getattr(exc, "body", None)
        if body is None and response is not None:
            try:
                body = response.json()
            except Exception:
                body = getattr(response, "text", "")
        retry_after = parse_retry_after(
            response.headers.get("retry-after") if response is not None else None
        )
        return self.classify(status, body, retry_after)

"""Provider failures classified into sentences that say what to do (K2), keys redacted (K3)."""

from __future__ import annotations

import functools
import json
import logging
import re
import threading
from dataclasses import dataclass
from typing import Any

from agent.kinds import ErrorKind


@dataclass
class ProviderError(Exception):
    """A classified provider failure.

    `kind` says why (agent.kinds.ErrorKind). `message` is the one sentence the user sees;
    `retryable` says whether retrying can help: the one decision the agent's retries follow
    (W8: never 400, 401, 403, 404, 422, unless a key pool rotated to another key, K1);
    `max_attempts`, when set, caps the attempts below the agent's own retry budget.
    """

    kind: ErrorKind
    message: str
    retryable: bool = False
    status: int | None = None
    retry_after: float | None = None
    detail: str = ""
    rotated: bool = False
    max_attempts: int | None = None
    context_limit: int | None = None
    """For a context overflow: the window the server said it has, when it said."""

    def __str__(self) -> str:
        return self.message


REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 8
"""Known values shorter than this are placeholders ("demo", "ollama"), never redacted as keys."""

CREDENTIAL_NAME = (
    r"(?:[a-z0-9]+[_.\-])*(?:key|apikey|token|accesstoken|secret|clientsecret|password|passwd|"
    r"pwd|auth|authorization|sig|signature|credentials?)"
)
"""A query parameter or header name that carries a credential (`key`, `api_key`, `x-api-key`,
`access_token`, `Authorization`...); its last word decides, so `monkey` or `design` do not."""


@functools.cache
def _key_patterns() -> tuple[re.Pattern[str], ...]:
    """The key shapes redaction removes, compiled on first use (not while the app starts)."""
    return (
        # Not inside a word: "disk-partitions" in a file a tool read is not a key.
        re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_\-]{8,}"),
        re.compile(r"(?i)(bearer\s+)[A-Za-z0-9_\-\.]{8,}"),
        re.compile(r"AIza[0-9A-Za-z_\-]{20,}"),
        re.compile(r"(?i)(x-api-key['\"]?\s*[:=]\s*['\"]?)[A-Za-z0-9_\-\.]{8,}"),
        # The password of a URL's userinfo: scheme://user:PASSWORD@host.
        re.compile(r"(?i)(\b[a-z][a-z0-9+.\-]*://[^\s/@:]*:)[^\s/@]+(?=@)"),
        # Credential query parameters: ?key=..., &api_key=..., #access_token=...
        re.compile(rf"(?i)([?&#]{CREDENTIAL_NAME}=)[^&\s#\"'<>{{}}()\[\]]+"),
    )


_known_lock = threading.Lock()
_known_secrets: set[str] = set()


def register_secret(*secrets: str | None) -> None:
    """Remember keys so every later redaction (and log line) removes them (K3)."""
    with _known_lock:
        _known_secrets.update(
            s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LENGTH
        )


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """Remove API keys (known ones and key-shaped strings) from a text (K3)."""
    with _known_lock:
        known = _known_secrets.union(s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH)
    from agent.providers.secret_forms import encoded_forms

    # A key in base64, hex or percent-encoding too (H9): the forms join the search.
    known |= {form for secret in known for form in encoded_forms(secret, MIN_SECRET_LENGTH)}
    # Longest first: a key that contains another key is removed whole.
    for secret in sorted(known, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    for pattern in _key_patterns():
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + REDACTED, text)
    return text


@dataclass(frozen=True)
class ErrorBody:
    """What a server's error body says: its message, its type and code, its raw fields."""

    message: str = ""
    type: str = ""
    code: str = ""
    reason: str = ""
    fields: dict[str, Any] | None = None


def error_body(body: Any) -> ErrorBody:
    """Read an error body of any of the shapes servers send.

    `{"error": {"message", "type", "code"}}` (OpenAI, llama.cpp, Ollama's /v1), `{"type":
    "error", "error": {...}}` (Anthropic), `{"object": "error", "message", "type", "code"}`
    (vLLM), `{"error": "text"}` (LM Studio, Ollama's own API), or plain text.
    """
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            type_ = str(err.get("type") or "")
            code = err.get("code")
            code_text = "" if code is None or isinstance(code, int) else str(code)
            reason = type_ or code_text or str(err.get("status") or "")
            for detail in err.get("details") or ():
                if isinstance(detail, dict) and detail.get("reason"):
                    reason = str(detail["reason"])
            message = str(err.get("message") or err.get("detail") or "")
            return ErrorBody(message, type_, code_text, reason, err)
        if isinstance(err, str):
            return ErrorBody(err)
    if isinstance(body, str):
        return ErrorBody(body.strip())
    return ErrorBody()


OVERFLOW_TYPES = frozenset({"exceed_context_size_error", "context_length_exceeded"})
"""Error types and codes that mean "the prompt does not fit the context" (llama.cpp, OpenAI)."""

OVERFLOW_PHRASES = (
    "context length",  # vLLM, OpenAI: "maximum context length is"; Ollama, LM Studio
    "context_length",
    "context size",  # llama.cpp: "exceeds the available context size"
    "context window",
    "context limit",  # Anthropic: "input length and `max_tokens` exceed context limit"
    "prompt is too long",  # Anthropic
    "too many tokens",
    "n_ctx",
)
"""Phrases of the same, for servers whose type and code do not say it."""


@functools.cache
def _limits() -> tuple[re.Pattern[str], ...]:
    """How servers state their context window in an overflow error, compiled on first use."""
    return (
        re.compile(r"available context size \((\d+) tokens\)"),  # llama.cpp
        re.compile(r"maximum context length is (\d+) tokens"),  # vLLM, OpenAI
        re.compile(r"tokens > (\d+) maximum"),  # Anthropic
        re.compile(r"n_ctx:? ?\(?(\d+)\)?"),  # LM Studio
        re.compile(r"context length of only (\d+) tokens"),  # LM Studio
    )


def is_context_overflow(found: ErrorBody) -> bool:
    """True when the body says the prompt does not fit: by type or code first, phrase second."""
    if found.type in OVERFLOW_TYPES or found.code in OVERFLOW_TYPES:
        return True
    text = found.message.lower()
    return any(phrase in text for phrase in OVERFLOW_PHRASES)


def overflow_limit(found: ErrorBody) -> int | None:
    """The context size an overflow error names (llama.cpp's `n_ctx`, or in its message)."""
    fields = found.fields or {}
    n_ctx = fields.get("n_ctx")
    if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0:
        return n_ctx
    for pattern in _limits():
        match = pattern.search(found.message)
        if match:
            return int(match.group(1))
    return None


def is_about_model(found: ErrorBody) -> bool:
    """True when a 404 is about the model (not a path the server does not serve)."""
    fields = found.fields or {}
    return (
        found.code == "model_not_found"
        or fields.get("param") == "model"
        or "model" in found.message.lower()
    )


def _context_overflow(
    found: ErrorBody, status: int, *, provider: str, model: str, detail: str
) -> ProviderError:
    limit = overflow_limit(found)
    where = f"{provider}'s context of {limit:,} tokens" if limit else f"{provider}'s context"
    return ProviderError(
        ErrorKind.CONTEXT_LENGTH,
        f"The conversation is too long for {model}: it exceeds {where}. Run /compact or "
        "start a /new session.",
        status=status,
        detail=detail,
        context_limit=limit,
    )


def _wrong_url(status: int, *, provider: str, url: str, detail: str, kind: str) -> ProviderError:
    ending = "ends in /v1" if kind == "openai" else "has no /v1 (the client adds /v1/messages)"
    said = f" ({detail})" if detail else ""
    return ProviderError(
        ErrorKind.NOT_FOUND,
        f"{provider} has no such endpoint at {url or 'its base_url'}: HTTP {status}{said}. "
        f"The base_url looks wrong: check it in config.yaml (for this wire it usually {ending}).",
        status=status,
        detail=detail,
    )


SERVER_MESSAGE_CHARS = 160
"""How much of a server's own error message a sentence quotes."""


def _shortened(text: str) -> str:
    """A server's message on one line, cut to SERVER_MESSAGE_CHARS."""
    line = " ".join(text.split())
    if len(line) > SERVER_MESSAGE_CHARS:
        line = line[: SERVER_MESSAGE_CHARS - 1] + "…"
    return line


def classify_status(
    status: int,
    body: Any,
    *,
    provider: str,
    model: str,
    retry_after: float | None = None,
    secrets: tuple[str, ...] = (),
    url: str = "",
    kind: str = "openai",
) -> ProviderError:
    """Turn an HTTP error status and its body into a ProviderError with an actionable sentence.

    `url` (credentials removed) and `kind` (the wire) shape the advice for a wrong base_url.
    """
    found = error_body(body)
    detail = redact(found.message, secrets)
    text_blob = redact(json.dumps(body) if isinstance(body, dict) else str(body), secrets)
    if status == 401 and (
        "ACCESS_TOKEN_TYPE_UNSUPPORTED" in text_blob or "Expected OAuth 2 access token" in text_blob
    ):
        return ProviderError(
            ErrorKind.GEMINI_LEGACY_KEY,
            f"{provider} rejected this Gemini key type: mint a new Gemini API key in "
            "Google AI Studio and put it in your config.",
            status=status,
            detail=detail,
        )
    if status in (401, 403):
        return ProviderError(
            ErrorKind.AUTH,
            f"{provider} rejected the API key (HTTP {status}): check the key in your "
            "config or environment.",
            status=status,
            detail=detail,
        )
    if status == 429:
        wait = f" in {retry_after:.0f} s" if retry_after else " in a moment"
        return ProviderError(
            ErrorKind.RATE_LIMIT,
            f"{provider} is rate-limiting requests (HTTP 429): try again{wait}.",
            retryable=True,
            status=status,
            retry_after=retry_after,
            detail=detail,
        )
    if status >= 400 and is_context_overflow(found):
        # Before the status: LM Studio and in-stream errors carry an overflow on any status.
        return _context_overflow(found, status, provider=provider, model=model, detail=detail)
    if status == 404 and not is_about_model(found):
        return _wrong_url(status, provider=provider, url=url, detail=detail, kind=kind)
    if status == 404:
        return ProviderError(
            ErrorKind.NOT_FOUND,
            f"{provider} does not know model {model!r} (HTTP 404): pick another with /model.",
            status=status,
            detail=detail,
        )
    if status in (400, 413, 422):
        summary = f": {detail}" if detail else ""
        return ProviderError(
            ErrorKind.BAD_REQUEST,
            f"{provider} refused the request (HTTP {status}){summary}.",
            status=status,
            detail=detail,
        )
    if status >= 500 or status in (408, 409):
        said = f" ({_shortened(detail)})" if detail else ""
        return ProviderError(
            ErrorKind.SERVER,
            f"{provider} is having trouble (HTTP {status}{said}): try again shortly.",
            retryable=True,
            status=status,
            retry_after=retry_after,
            detail=detail,
        )
    return ProviderError(
        ErrorKind.BAD_REQUEST,
        f"{provider} answered HTTP {status}{': ' + detail if detail else ''}.",
        retryable=False,
        status=status,
        detail=detail,
    )


LOCAL_REFUSED_ATTEMPTS = 1
"""A refused connection on this machine is not retried: nothing listens at that port (a
server that is loading its model already listens, and answers 503, which is retried), and
five tries would only make a wrong port take ten seconds or more to report."""


def _causes(exc: BaseException) -> list[BaseException]:
    """`exc` and what caused it, outermost first (the SDKs wrap the socket's own error)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not s for s in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def refused(exc: BaseException) -> bool:
    """True when the connection was refused (nothing listens there), anywhere in its causes."""
    return any(isinstance(cause, ConnectionRefusedError) for cause in _causes(exc))


_PLAIN_HTTP_MARKS = ("wrong_version_number", "record layer failure", "packet length too long",
                     "http_request")  # fmt: skip
"""What OpenSSL says when the other end answers a TLS hello in plain http."""


def _tls_problem(provider: str, base_url: str, exc: BaseException) -> str | None:
    """The sentence for a TLS failure among `exc`'s causes (untrusted, plain http), or None."""
    import ssl

    for cause in _causes(exc):
        if isinstance(cause, ssl.SSLCertVerificationError):
            why = cause.verify_message or "not trusted"
            return (
                f"The TLS certificate of {base_url} is not trusted ({why}): point SSL_CERT_FILE, "
                f"or `ca_file` under providers.{provider}, at the CA bundle that signed it."
            )
        text = str(cause).lower()
        if isinstance(cause, ssl.SSLError) and any(m in text for m in _PLAIN_HTTP_MARKS):
            plain = base_url.replace("https://", "http://", 1)
            return (
                f"The server at {base_url} speaks plain http, not https: "
                f"set base_url to {plain} for {provider}."
            )
    return None


def connection_error(
    provider: str, base_url: str, exc: BaseException, *, local: bool = False
) -> ProviderError:
    """A connection that could not be made."""
    tls = _tls_problem(provider, base_url, exc)
    if tls is not None:
        # Retrying cannot change a certificate or the server's protocol.
        return ProviderError(ErrorKind.CONNECTION, tls, detail=type(exc).__name__)
    if local and refused(exc):
        return ProviderError(
            ErrorKind.CONNECTION,
            f"Nothing is listening at {base_url} for {provider} (connection refused): start "
            "the server, or fix the port in base_url.",
            retryable=True,
            detail=type(exc).__name__,
            max_attempts=LOCAL_REFUSED_ATTEMPTS,
        )
    return ProviderError(
        ErrorKind.CONNECTION,
        f"Cannot reach {provider} at {base_url}: is the server running and the URL right?",
        retryable=True,
        detail=type(exc).__name__,
    )


def dropped_error(provider: str, exc: BaseException) -> ProviderError:
    """The connection broke while the answer streamed (it was reached, so not 'cannot reach')."""
    return ProviderError(
        ErrorKind.CONNECTION,
        f"The connection to {provider} dropped mid-answer ({type(exc).__name__}).",
        retryable=True,
        detail=type(exc).__name__,
    )


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds form only), or None."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def summarize(exc: BaseException) -> str:
    """The sentence the user sees for a failure (K2).

    A ProviderError's message is the guidance an adapter composed (the Gemini legacy-key advice,
    rate-limit waits...): it is used as is, never replaced by the raw response body.
    """
    if isinstance(exc, ProviderError):
        return redact(exc.message)
    return redact(f"{type(exc).__name__}: {exc}")


class RedactingFilter(logging.Filter):
    """Rewrites every record so no key reaches a log handler (K3)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True
        cleaned = redact(message)
        if cleaned != message or record.args:
            record.msg, record.args = cleaned, ()
        if record.exc_info and record.exc_info[1] is not None:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact(text)
        return True


_FILTER = RedactingFilter()


def install_log_redaction(root: str = "hermes_tui") -> None:
    """Attach the redacting filter to the `root` logger, its handlers and every known child.

    Logger filters do not apply to records propagated from children, so each existing
    `root.*` logger gets the filter too (idempotent; call again after new loggers appear).
    """
    names = [root] + [n for n in logging.root.manager.loggerDict if n.startswith(root + ".")]
    for name in names:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
        for handler in logger.handlers:
            if _FILTER not in handler.filters:
                handler.addFilter(_FILTER)

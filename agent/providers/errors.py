"""Provider failures classified into sentences that say what to do (K2), keys redacted (K3)."""

from __future__ import annotations

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

_KEY_PATTERNS = (
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
    # Longest first: a key that contains another key is removed whole.
    for secret in sorted(known, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    for pattern in _KEY_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + REDACTED, text)
    return text


def _body_message(body: Any) -> tuple[str, str]:
    """(message, reason) pulled out of a provider error body."""
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            message = str(err.get("message") or "")
            reason = str(err.get("type") or err.get("code") or err.get("status") or "")
            for detail in err.get("details") or ():
                if isinstance(detail, dict) and detail.get("reason"):
                    reason = str(detail["reason"])
            return message, reason
        if isinstance(err, str):
            return err, ""
    if isinstance(body, str):
        return body, ""
    return "", ""


def _looks_like_context_overflow(text: str) -> bool:
    text = text.lower()
    return any(
        phrase in text
        for phrase in (
            "context length",
            "context_length",
            "maximum context",
            "prompt is too long",
            "too many tokens",
            "context window",
        )
    )


def classify_status(
    status: int,
    body: Any,
    *,
    provider: str,
    model: str,
    retry_after: float | None = None,
    secrets: tuple[str, ...] = (),
) -> ProviderError:
    """Turn an HTTP error status and its body into a ProviderError with an actionable sentence."""
    raw_message, _reason = _body_message(body)
    detail = redact(raw_message, secrets)
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
    if status == 404:
        return ProviderError(
            ErrorKind.NOT_FOUND,
            f"{provider} does not know model {model!r} (HTTP 404): pick another with /model.",
            status=status,
            detail=detail,
        )
    if status in (400, 413, 422) and _looks_like_context_overflow(text_blob):
        return ProviderError(
            ErrorKind.CONTEXT_LENGTH,
            f"The conversation is too long for {model}: run /compact or start a /new session.",
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
        return ProviderError(
            ErrorKind.SERVER,
            f"{provider} is having trouble (HTTP {status}): try again shortly.",
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


def connection_error(provider: str, base_url: str, exc: BaseException) -> ProviderError:
    """A connection that could not be made or broke mid-stream."""
    return ProviderError(
        ErrorKind.CONNECTION,
        f"Cannot reach {provider} at {base_url}: is the server running and the URL right?",
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

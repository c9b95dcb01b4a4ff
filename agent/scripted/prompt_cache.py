"""Anthropic's prompt cache as its documentation describes it, for the `anthropic` persona ($1).

A request's prefix is its blocks in order: each tool, each system block, each message's
content blocks. At each `cache_control` breakpoint the prefix up to and including that block
is hashed. A later request reads the longest cached prefix it shares, found at one of its
breakpoints or at one of the 20 block boundaries before each (the documented lookback); it
writes the prefix up to its last breakpoint past what it read, when that prefix is at least
the minimum cacheable length. An entry lives five minutes from its last use. The marks
themselves are not part of the prefix, so moving a breakpoint never breaks a cache.

Usage then says what Anthropic's does: `cache_read_input_tokens` (read),
`cache_creation_input_tokens` (written), `input_tokens` (the rest, after the last breakpoint).

The `openai` persona's cache is implicit, as OpenAI documents it: no marks; a prompt of at
least 1,024 tokens is cached at every block boundary, and a later one reads the longest
cached prefix it starts with, in steps of 128 tokens past the first 1,024
(`prompt_tokens_details.cached_tokens`, counted inside `prompt_tokens`).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent.scripted.script import CHARS_PER_TOKEN

MIN_CACHEABLE_TOKENS = 1024
"""Sonnet's and Opus's documented minimum (a shorter prefix is never cached)."""
TTL_SECONDS = 300.0
LOOKBACK_BLOCKS = 20
IMPLICIT_STEP_TOKENS = 128


@dataclass(frozen=True)
class CacheUsage:
    """One request's input split as Anthropic bills it."""

    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int


def prefix_blocks(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The request's blocks in cache order, each as its canonical text (without its mark)
    and whether it carries a breakpoint."""
    blocks: list[tuple[str, bool]] = []

    def add(prefix: str, block: Any) -> None:
        if isinstance(block, dict):
            marked = "cache_control" in block
            block = {k: v for k, v in block.items() if k != "cache_control"}
        else:
            marked = False
        blocks.append((prefix + json.dumps(block, sort_keys=True, ensure_ascii=False), marked))

    for tool in body.get("tools") or ():
        add("tool:", tool)
    system = body.get("system")
    for block in [system] if isinstance(system, str) else system or ():
        add("system:", block)
    for message in body.get("messages") or ():
        if not isinstance(message, dict):
            continue
        role = str(message.get("role", ""))
        content = message.get("content")
        parts = [content] if isinstance(content, str) else content or ()
        for index, block in enumerate(parts):
            # A message's first block carries its role: the same blocks in other turns differ.
            add(f"{role}:" if index == 0 else "+:", block)
    return blocks


class PromptCache:
    """The cached prefixes of one scripted server (a reset empties it)."""

    def __init__(
        self,
        min_tokens: int = MIN_CACHEABLE_TOKENS,
        ttl: float = TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.min_tokens = min_tokens
        self.ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._expires: dict[str, float] = {}

    def account(self, body: dict[str, Any]) -> CacheUsage:
        """Read and write this request's prefixes; its usage as Anthropic counts it."""
        blocks = prefix_blocks(body)
        digests, totals = _prefixes(blocks)
        total = totals[-1] if totals else 0
        marks = [i for i, (_text, marked) in enumerate(blocks) if marked]
        now = self._clock()
        with self._lock:
            read_at = self._longest_hit(marks, digests, now)
            read = totals[read_at] if read_at is not None else 0
            if read_at is not None:
                self._expires[digests[read_at]] = now + self.ttl  # a read refreshes it
            written = 0
            if marks and totals[marks[-1]] >= self.min_tokens:
                written = max(0, totals[marks[-1]] - read)
                for mark in marks:
                    if totals[mark] >= self.min_tokens:
                        self._expires[digests[mark]] = now + self.ttl
        return CacheUsage(total - read - written, read, written)

    def account_implicit(self, body: dict[str, Any]) -> tuple[int, int]:
        """OpenAI's implicit cache: (prompt tokens, of which cached) of this request."""
        digests, totals = _prefixes(prefix_blocks(body))
        total = totals[-1] if totals else 0
        now = self._clock()
        with self._lock:
            hit = next(
                (
                    i
                    for i in range(len(digests) - 1, -1, -1)
                    if self._expires.get(digests[i], 0.0) > now
                ),
                None,
            )
            for digest, upto in zip(digests, totals, strict=True):
                if upto >= self.min_tokens:
                    self._expires[digest] = now + self.ttl
        if hit is None or totals[hit] < self.min_tokens:
            return total, 0
        steps = (totals[hit] - self.min_tokens) // IMPLICIT_STEP_TOKENS
        return total, self.min_tokens + steps * IMPLICIT_STEP_TOKENS

    def _longest_hit(self, marks: list[int], digests: list[str], now: float) -> int | None:
        """The last block of the longest live cached prefix this request shares."""
        best: int | None = None
        for mark in marks:
            for index in range(mark, max(-1, mark - LOOKBACK_BLOCKS - 1), -1):
                expires = self._expires.get(digests[index])
                if expires is not None and expires > now:
                    if best is None or index > best:
                        best = index
                    break
        return best


def _prefixes(blocks: list[tuple[str, bool]]) -> tuple[list[str], list[int]]:
    """The running digest and token count after each block."""
    digests: list[str] = []
    totals: list[int] = []
    running = hashlib.sha256()
    total = 0
    for text, _marked in blocks:
        running.update(text.encode())
        digests.append(running.hexdigest())
        total += max(1, len(text) // CHARS_PER_TOKEN)
        totals.append(total)
    return digests, totals

"""The anthropic persona's prompt cache ($1): prefixes hashed up to each breakpoint, the
longest live one read (within the 20-block lookback), a minimum length, a 5-minute life."""

from __future__ import annotations

from agent.scripted.prompt_cache import LOOKBACK_BLOCKS, PromptCache

MARK = {"type": "ephemeral"}
WORDS = "word " * 200  # about 250 tokens a block


def _user(text: str, marked: bool = False) -> dict:
    block = {"type": "text", "text": text}
    if marked:
        block["cache_control"] = MARK
    return {"role": "user", "content": [block]}


def _body(*messages: dict) -> dict:
    return {
        "system": [{"type": "text", "text": WORDS, "cache_control": MARK}],
        "messages": list(messages),
    }


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_prefix_is_written_then_read_and_only_the_new_part_is_written():
    cache = PromptCache(min_tokens=100, clock=Clock())
    first = cache.account(_body(_user("a " + WORDS, marked=True)))
    assert first.cache_read_input_tokens == 0 and first.cache_creation_input_tokens > 0
    assert first.input_tokens == 0
    second = cache.account(
        _body(
            _user("a " + WORDS, marked=True),
            {"role": "assistant", "content": "ok"},
            _user("b", True),
        )
    )
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens > 0


def test_the_marks_are_not_part_of_the_prefix():
    """Moving a breakpoint on never breaks the cache of the bytes it sat on."""
    cache = PromptCache(min_tokens=100, clock=Clock())
    wrote = cache.account(_body(_user("a " + WORDS, marked=True))).cache_creation_input_tokens
    moved = cache.account(_body(_user("a " + WORDS), _user("b", marked=True)))
    # The old mark's prefix is found by the lookback from the new mark.
    assert moved.cache_read_input_tokens == wrote


def test_below_the_minimum_nothing_is_cached():
    cache = PromptCache(min_tokens=100_000, clock=Clock())
    used = cache.account(_body(_user("a", marked=True)))
    assert used.cache_creation_input_tokens == used.cache_read_input_tokens == 0
    assert used.input_tokens > 0


def test_an_entry_lives_five_minutes_from_its_last_use():
    clock = Clock()
    cache = PromptCache(min_tokens=100, clock=clock)
    body = _body(_user("a " + WORDS, marked=True))
    cache.account(body)
    clock.now = 299.0
    assert cache.account(body).cache_read_input_tokens > 0  # a read refreshes it
    clock.now = 299.0 + 299.0
    assert cache.account(body).cache_read_input_tokens > 0
    clock.now += 301.0
    assert cache.account(body).cache_read_input_tokens == 0


def test_the_lookback_stops_twenty_blocks_before_a_breakpoint():
    cache = PromptCache(min_tokens=100, clock=Clock())
    head = _user("a " + WORDS, marked=True)
    cache.account(_body(head))
    filler = [
        {"role": "assistant" if i % 2 else "user", "content": f"m{i}"}
        for i in range(LOOKBACK_BLOCKS)
    ]
    far = cache.account(_body(_user("a " + WORDS), *filler, _user("z", marked=True)))
    assert far.cache_read_input_tokens > 0  # the system block's mark still reads its own prefix
    near = cache.account(_body(_user("a " + WORDS), *filler[:5], _user("y", marked=True)))
    assert near.cache_read_input_tokens > far.cache_read_input_tokens

"""Outside JSON (a model's tool arguments) parses to a value or raises ValueError only,
whatever is thrown at it: deep nesting, NaN, huge numbers, lone surrogates, invalid UTF-8,
duplicate keys (H10)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent import outside_json
from agent.messages import ToolCall


def nested(depth: int, opener: str = "[", closer: str = "]") -> str:
    return opener * depth + closer * depth


def nested_objects(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


ODD = [
    nested(5_000),
    nested_objects(5_000),
    nested(100_000),
    '{"a": NaN}',
    '{"a": Infinity}',
    '{"a": -Infinity}',
    '{"a": 1e999}',
    '{"a": ' + "9" * 10_000 + "}",
    '{"a": "\\ud800"}',
    '{"\\udfff": 1}',
    '{"a": 1, "a": 2}',
    '{"a": ',
    "\x00",
    "[1, 2",
]


@pytest.mark.parametrize("text", ODD, ids=range(len(ODD)))
def test_odd_json_is_refused_with_a_value_error(text):
    """H10: each classic trap is a ValueError with words, never RecursionError or a NaN."""
    with pytest.raises(ValueError) as caught:
        ToolCall("c", "t", text).parsed_arguments()
    assert str(caught.value)


def test_invalid_utf8_bytes_are_a_value_error():
    with pytest.raises(ValueError):
        outside_json.loads(b'{"a": "\xff\xfe"}')


def test_ordinary_arguments_still_parse():
    text = json.dumps({"path": "a.txt", "content": "é\n" * 10, "n": [1, 2.5, {"x": None}]})
    assert ToolCall("c", "t", text).parsed_arguments() == json.loads(text)
    assert ToolCall("c", "t", "  ").parsed_arguments() == {}
    deep_enough = nested_objects(outside_json.MAX_DEPTH - 1)
    assert ToolCall("c", "t", deep_enough).parsed_arguments()


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=40,
)
_fragments = st.sampled_from(
    ["[", "]", "{", "}", '"a":', ",", "NaN", "-Infinity", "1e999", '"\\ud800"', "9" * 5000, ":"]
)


def _accepts_or_value_error(text: str | bytes) -> None:
    try:
        value = outside_json.loads(text)
    except ValueError:
        return
    # What passes can go on: dumped as strict JSON and encoded as UTF-8, as every wire does.
    json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")


@settings(max_examples=300, deadline=None)
@given(_values)
def test_any_json_value_parses_or_is_a_value_error(value):
    """H10: dumped Python values (NaN, infinities, surrogates in text) either come back as
    sendable JSON or are a ValueError."""
    _accepts_or_value_error(json.dumps(value))


@settings(max_examples=300, deadline=None)
@given(st.lists(_fragments, max_size=60), st.integers(0, 6_000))
def test_any_fragment_soup_and_depth_parses_or_is_a_value_error(pieces, depth):
    """H10: brackets, constants and huge numbers in any order, at any depth."""
    _accepts_or_value_error("[" * depth + "".join(pieces) + "]" * depth)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_parse_or_are_a_value_error(data):
    """H10: invalid UTF-8 and arbitrary bytes."""
    _accepts_or_value_error(data)
    _accepts_or_value_error(data.decode("utf-8", "surrogateescape"))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_parsed_arguments_return_a_dict_or_raise_value_error(text):
    try:
        assert isinstance(ToolCall("c", "t", text).parsed_arguments(), dict)
    except ValueError:
        pass

"""Settings declared once, as frozen dataclasses, and checked by pydantic against YAML.

A section is a `@settings` dataclass: one annotated line per setting, its default the value
when the file does not set it. `checked()` validates what the file says against it (unknown
keys refused, choices as enums, types strict as in JSON) and turns the first mistake into
one sentence naming the file, the line and the key. pydantic is imported only when there is
a file to check, so a first start and the demo reach their first frame without it.

The markers below go in `Annotated[...]` and need no pydantic at import either: `AtLeast`
bounds a number, `Before` turns what YAML gives into what the type takes (a bare `on`, read
as true, into a mode), `Check` refuses a value with a phrase, `Must` words the sentence.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import (
    Annotated,
    Any,
    Literal,
    TypeVar,
    Union,
    dataclass_transform,
    get_args,
    get_origin,
    get_type_hints,
)

from agent.config_source import ConfigError, LineMapping, walk
from agent.credentials import is_credential_name

T = TypeVar("T")
M = TypeVar("M")

FILE_CONFIG = {"extra": "forbid", "allow_inf_nan": False}
"""pydantic's settings for every section: an unknown key is a mistake, so is NaN."""
NOT_IN_FILE = {"in_file": False}
"""Field metadata: set by the loader, not a key of the file (`providers.NAME.name`)."""


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def settings(cls: type[T]) -> type[T]:
    """A frozen dataclass whose fields are the keys of a config section (unknown ones refused)."""
    cls.__pydantic_config__ = FILE_CONFIG  # type: ignore[attr-defined]
    return dataclasses.dataclass(frozen=True)(cls)


@dataclasses.dataclass(frozen=True)
class AtLeast:
    """A number setting's lowest value."""

    bound: float

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        return {**handler(source), "ge": self.bound}


@dataclasses.dataclass(frozen=True)
class Before:
    """Turn the file's value into what the type takes, before it is checked (see `checked`)."""

    convert: Callable[[Any], Any]


@dataclasses.dataclass(frozen=True)
class Check:
    """Refuse a value of the right type: `problem(value)` is the phrase saying why, or None."""

    problem: Callable[[Any], str | None]

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import PydanticCustomError, core_schema

        def check(value: Any) -> Any:
            phrase = self.problem(value)
            if phrase:
                raise PydanticCustomError("config_check", "{phrase}", {"phrase": phrase})
            return value

        return core_schema.no_info_after_validator_function(check, handler(source))


@dataclasses.dataclass(frozen=True)
class Must:
    """What a setting must do, in words (`be a list of paths`), for the sentence of a mistake."""

    words: str


def scalar_text(value: Any) -> Any:
    """A number where text is wanted (a header value, a key) as its text; booleans stay."""
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def one_or_many(value: Any) -> Any:
    """A single name where a list of names is wanted, as a list of one."""
    return [value] if isinstance(value, str) else value


def checked(cls: Any, data: Any, *, path: Path, at: Sequence[str] = ()) -> Any:
    """`data` (the file's value at `at`) as a `cls`, or a ConfigError naming file, line, key.

    A key set to nothing (`key:` alone) means its default.
    """
    from pydantic import ValidationError

    data = _prepared(cls, data)
    # Checked as JSON, strictly: YAML gives JSON's kinds of value, and JSON's strict rules
    # are the file's (a list is a tuple, a name is its enum member, "5" is not a number).
    text = json.dumps(data, default=str)
    try:
        return _adapter(cls).validate_json(text, strict=True)
    except ValidationError as exc:
        raise ConfigError(_sentence(exc.errors()[0], cls, data, path, tuple(at))) from None


@functools.cache
def _adapter(cls: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(cls)


def _prepared(hint: Any, data: Any) -> Any:
    """`data` with every `Before` on its declared type applied and every null setting left
    out; mappings keep the lines they were read from."""
    for convert in _markers(hint, Before):
        data = convert.convert(data)
    bare = bare_type(hint)
    if isinstance(data, dict) and (dataclasses.is_dataclass(bare) or get_origin(bare) is dict):
        return _prepared_mapping(bare, data)
    if isinstance(data, list) and get_origin(bare) in (tuple, list):
        return [_prepared(get_args(bare)[0], item) for item in data]
    return data


def _prepared_mapping(bare: Any, data: dict[Any, Any]) -> dict[Any, Any]:
    # A hint is a class, never an instance: the isinstance narrows it for the type checker.
    is_settings = isinstance(bare, type) and dataclasses.is_dataclass(bare)
    hints = type_hints(bare) if is_settings else {}
    default = get_args(bare)[1] if get_origin(bare) is dict else Any
    out = {k: _prepared(hints.get(str(k), default), v) for k, v in data.items() if v is not None}
    return LineMapping(out, data.lines) if isinstance(data, LineMapping) else out


_NOUNS = {
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "finite_number": "a finite number",
    "bool_type": "true or false",
    "string_type": "text",
    "dict_type": "a mapping",
    "dataclass_type": "a mapping",
    "tuple_type": "a list of names",
    "list_type": "a list of names",
}
"""What a setting must be, in words, by the kind of pydantic error."""


def _sentence(
    error: Mapping[str, Any], cls: Any, data: Any, path: Path, at: tuple[str, ...]
) -> str:
    """The one sentence for pydantic's `error` about `data` (read from `path`)."""
    loc, kind, inside_list = _located(error)
    value, line = walk(data, loc)
    place = f"{path}, line {line}" if line else str(path)
    label = ".".join(str(part) for part in (*at, *loc))
    hint, owner = _declared(cls, loc)
    if kind in ("unknown_key", "extra_forbidden", "unexpected_keyword_argument"):
        known = _keys_of(_declared(cls, loc[:-1])[0]) if kind == "unknown_key" else owner
        return f"{place}: unknown key `{label}` (known: {', '.join(known)})."
    if kind == "config_check":
        return f"{place}: `{label}` {error['ctx']['phrase']}."
    # A key's value is never echoed, not even a wrong one.
    shown = "" if is_credential_name(str(loc[-1]) if loc else "") else f", got {value!r}"
    return f"{place}: `{label}` must {_words(error, hint, inside_list)}{shown}."


def _located(error: Mapping[str, Any]) -> tuple[tuple[Any, ...], str, bool]:
    """Where the sentence points (a bad list item: the list), what went wrong, and whether
    it was an item."""
    loc, kind = tuple(error["loc"]), error["type"]
    if loc[-1:] == ("[key]",):  # a key outside a fixed set (price names)
        loc, kind = loc[:-1], "unknown_key"
    inside_list = bool(loc) and isinstance(loc[-1], int)
    while loc and isinstance(loc[-1], int):
        loc = loc[:-1]
    return loc, kind, inside_list


def _words(error: Mapping[str, Any], hint: Any, inside_list: bool) -> str:
    """What the setting must do (`be an integer`...), for pydantic's `error` about it."""
    kind = error["type"]
    if kind == "greater_than_equal":
        return f"be at least {error['ctx']['ge']:g}"
    words = _must(hint)
    if words is None and kind in ("enum", "literal_error"):
        words = f"be one of {', '.join(_keys_of(hint))}"
    if words is None:
        noun = "a list of names" if inside_list else _NOUNS.get(kind)
        words = f"be {noun}" if noun else f"be valid ({error['msg'].lower()})"
    return words


def _declared(cls: Any, loc: Sequence[str | int]) -> tuple[Any, list[str]]:
    """The type declared at `loc` under `cls`, and the keys of the dataclass `loc` ends in."""
    hint, owner = cls, None
    for part in loc:
        bare = bare_type(hint)
        if isinstance(bare, type) and dataclasses.is_dataclass(bare):
            owner, hint = bare, type_hints(bare).get(str(part), Any)
        elif get_origin(bare) in (dict, tuple, list):
            owner, hint = None, get_args(bare)[-1 if get_origin(bare) is dict else 0]
        else:
            return Any, []
    return hint, _fields_of(owner)


def bare_type(hint: Any) -> Any:
    """`hint` without `Annotated` and without `| None`."""
    while True:
        if get_origin(hint) is Annotated:
            hint = get_args(hint)[0]
        elif get_origin(hint) in (Union, types.UnionType):
            hint = next(arg for arg in get_args(hint) if arg is not type(None))
        else:
            return hint


def _markers(hint: Any, kind: type[M]) -> list[M]:
    """The `kind` markers on `hint` (or on its part that is not None)."""
    return [
        marker
        for part in (hint, *get_args(hint))
        if get_origin(part) is Annotated
        for marker in part.__metadata__
        if isinstance(marker, kind)
    ]


def _must(hint: Any) -> str | None:
    """The `Must` words on `hint`, if any."""
    found = _markers(hint, Must)
    return found[0].words if found else None


@functools.cache
def type_hints(cls: type) -> dict[str, Any]:
    """The declared types of a dataclass's fields, `Annotated` markers kept."""
    return get_type_hints(cls, include_extras=True)


def _fields_of(owner: Any) -> list[str]:
    if owner is None:
        return []
    fields = dataclasses.fields(owner)
    return [f.name for f in fields if f.metadata.get("in_file", True)]


def _keys_of(hint: Any) -> list[str]:
    """The choices of an enum or Literal, or of the keys of a mapping of them."""
    bare = bare_type(hint)
    if get_origin(bare) is dict:
        bare = bare_type(get_args(bare)[0])
    if isinstance(bare, type) and issubclass(bare, Enum):
        return [str(member.value) for member in bare]
    if get_origin(bare) is Literal:
        return [str(arg) for arg in get_args(bare)]
    return []

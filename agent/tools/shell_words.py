"""A shell command's words, when it is one simple command; else None (N3).

Permission rules match commands by their words, so they must know the words are all the
shell will run. The command is parsed with tree-sitter-bash (the grammar editors and other
agents use; maintained, compiled, and it parses every construct bash has, so nothing hides
in a corner the parser skips) and then read through an allow-list: one command, a plain
name, arguments that are plain words or quoted strings with nothing the shell expands.
Everything else (`;`, `&&`, `||`, pipes, `&`, newlines, comments, substitutions, process
substitution, redirections, here-docs, subshells, groups, assignments, globs, braces, `~`,
`$'...'`, escapes, control or look-alike characters, or text the parser reports an error
in) is not a simple command, so no allow rule can match it.
"""

from __future__ import annotations

import functools
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

MAX_COMMAND_CHARS = 8_000
"""Longer commands are never simple: a rule is for the short commands people repeat."""

UNQUOTED_UNSAFE = frozenset("\\*?[]{}~$`'\"<>|&;()!#\n\r\t ")
"""Characters that make an unquoted word mean more than its text (or hint that it does)."""
NAME_UNSAFE = UNQUOTED_UNSAFE | frozenset("/=")
"""A command name is a bare name: `./pytest` or `/tmp/pytest` is another program."""
QUOTED_UNSAFE = frozenset("$`\\!")
"""In double quotes these still expand or escape."""


@functools.cache
def _parser() -> Parser:
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def simple_command(text: str) -> tuple[str, ...] | None:
    """The words `text` runs (name first, quotes removed) if it is one simple command."""
    if not text.strip() or len(text) > MAX_COMMAND_CHARS or not _plain_characters(text):
        return None
    try:
        source = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return None
    root = _parser().parse(source).root_node
    if root.has_error or root.type != "program" or root.child_count != 1:
        return None  # more than one statement, a trailing `;` or `&`, a comment, an error
    command = root.children[0]
    if command.type != "command" or command.end_byte - command.start_byte != len(source.strip()):
        return None
    words: list[str] = []
    for index, child in enumerate(command.children):
        if index == 0:
            name = _command_name(child)
            if name is None:
                return None
            words.append(name)
            continue
        word = _argument(child)
        if word is None:
            return None
        words.append(word)
    return tuple(words) if words else None


def _plain_characters(text: str) -> bool:
    """No control, format or invisible characters, and nothing NFKC folds into another
    (a full-width `；` or `｜`, a non-breaking space): what is shown is what runs."""
    if unicodedata.normalize("NFKC", text) != text:
        return False
    return all(char == " " or unicodedata.category(char)[0] not in "CZ" for char in text)


def _command_name(node: Node) -> str | None:
    if node.type != "command_name" or node.named_child_count != 1:
        return None
    word = node.named_children[0]
    if word.type != "word":
        return None  # a quoted, expanded or concatenated name
    return _unquoted(word, NAME_UNSAFE)


def _argument(node: Node) -> str | None:
    if node.type == "concatenation":
        parts = [_piece(part) for part in node.children]
        return None if any(part is None for part in parts) else "".join(map(str, parts))
    return _piece(node)


def _piece(node: Node) -> str | None:
    """One word or quoted string, quotes taken off; None for anything the shell expands."""
    if node.type in ("word", "number"):
        return _unquoted(node, UNQUOTED_UNSAFE)
    if node.type == "raw_string":
        text = _text(node)
        return text[1:-1] if len(text) >= 2 and "'" not in text[1:-1] else None
    if node.type == "string":
        if any(child.type != "string_content" for child in node.named_children):
            return None
        text = _text(node)
        inner = text[1:-1]
        if len(text) < 2 or any(char in QUOTED_UNSAFE or char == '"' for char in inner):
            return None
        return inner
    return None


def _unquoted(node: Node, unsafe: frozenset[str]) -> str | None:
    if node.named_child_count:
        return None
    text = _text(node)
    return None if not text or any(char in unsafe for char in text) else text


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8")


def words_of_parts(text: str) -> list[tuple[str, ...]]:
    """The words of every command anywhere in `text` (inside lists, pipes, substitutions),
    each word unquoted where it is plain and as written where it is not: what deny and ask
    rules look at in a command that is not simple."""
    if len(text) > MAX_COMMAND_CHARS * 4:
        return []
    root = _parser().parse(text.encode("utf-8", "replace")).root_node
    found: list[tuple[str, ...]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(reversed(node.children))
        if node.type != "command":
            continue
        name = node.child_by_field_name("name")
        if name is None:
            continue
        arguments = node.children_by_field_name("argument")
        found.append(tuple(_loose(part) for part in (name, *arguments)))
    return found


def _loose(node: Node) -> str:
    if node.type == "command_name" and node.named_child_count == 1:
        node = node.named_children[0]
    word = _argument(node)
    return word if word is not None else _text(node)

"""What is being completed at the cursor: a command name, a command's argument, or an
`@path` mention (the mention wins: it works inside a command's arguments too)."""

from __future__ import annotations

from dataclasses import dataclass

MENTION_STARTS = " \t\n([{,;"
"""An `@` starts a mention at the start of the text or after one of these."""


@dataclass(frozen=True)
class Token:
    """The text the cursor is completing: `kind` name | argument | mention.

    `start`/`end` are offsets in the composer's text of what a completion replaces; `query`
    is what was typed of it so far; `command` names the command an argument belongs to.
    """

    kind: str
    query: str
    start: int
    end: int
    command: str = ""
    quoted: bool = False


def _mention(text: str, cursor: int) -> Token | None:
    """The `@path` (or `@"a path"`) the cursor is in or at the end of."""
    line_start = text.rfind("\n", 0, cursor) + 1
    at = text.rfind("@", line_start, cursor)
    while at >= 0:
        if at == 0 or text[at - 1] in MENTION_STARTS:
            break
        at = text.rfind("@", line_start, at)
    if at < 0:
        return None
    typed = text[at + 1 : cursor]
    quoted = typed.startswith('"')
    if quoted:
        if '"' in typed[1:]:
            return None  # the quoted path is closed: the cursor is past it
        query = typed[1:]
    elif any(ch.isspace() for ch in typed) or '"' in typed:
        return None
    else:
        query = typed
    end = cursor
    while end < len(text) and not text[end].isspace():
        end += 1
    return Token("mention", query, at, end, quoted=quoted)


def token_at(text: str, cursor: int) -> Token | None:
    """The completion the cursor (an offset into `text`) is in, or None."""
    mention = _mention(text, cursor)
    if mention is not None:
        return mention
    if not text.startswith("/") or "\n" in text[:cursor]:
        return None
    head = text[:cursor]
    space = head.find(" ")
    if space < 0:
        end = len(text) if " " not in text else text.find(" ")
        return Token("name", head[1:], 0, max(end, cursor))
    command = head[1:space].lower()
    argument = head[space + 1 :]
    return Token("argument", argument, space + 1, len(text), command=command)

"""Terminal-safe text: no outside string can put a control sequence on the terminal (SPEC H1).

Everything the model, a tool, a file or the database says is drawn or printed through one of
these functions. A terminal acts on control characters (ESC starts every escape sequence:
CSI, OSC, DCS, APC, PM, SOS; C1 characters start them alone; BEL ends an OSC; CR moves back
over a line), so each one is replaced by a visible form (ESC shows as ␛, C1 as ``\\x9b``);
the parameter bytes after it are plain printable text and show as they are (``␛[19D``). The
replacement works character by character, so streamed text split anywhere gives the same
result as the whole. ``\\n`` and ``\\t`` are kept.

Three strengths, for three kinds of text:

- `safe_text`: prose (answers, reasoning, notices, errors). CR is dropped (CRLF becomes LF;
  a lone CR could only hide what follows it), bidi overrides are shown.
- `safe_line`: what the user must read exactly (tool names, arguments, commands, titles,
  snippets, the approval dialog). CR and every invisible formatting character (zero-width
  spaces, bidi controls, tag characters, ...) are shown as well.
- `safe_name`: a name in a list (a file, a folder, a session title, a server or tool).
  Like `safe_line`, and newlines and tabs are shown too (␊, ␉): a name is one row, so a
  file named ``a\\nb.txt`` is one entry that cannot pose as two, nor as ``a b.txt``.
- `safe_output`: tool output and file contents. Line-ending CRs become line breaks and whole
  escape sequences (colours and the like) are dropped, then it is made safe like prose.

Markup is a separate matter: these functions never add or remove ``[``; widgets show the
result as literal `Content`, never as markup.
"""

from __future__ import annotations

import re

_PICTURES = {chr(code): chr(0x2400 + code) for code in range(0x20)} | {"\x7f": "\u2421"}
"""C0 controls and DEL as their Control Pictures glyphs (␀ … ␟, ␡)."""

_C0_C1 = "\x00-\x08\x0b-\x1f\x7f-\x9f"
_SURROGATES = "\ud800-\udfff"
"""Lone surrogates (from JSON like "\\ud800") cannot even be encoded for the terminal."""
_BIDI = "\u202a-\u202e\u2066-\u2069"
"""Embeddings, overrides and isolates: they reorder how text reads ("trojan source")."""
_INVISIBLE = (
    "\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f\u2028\u2029\u2060-\u2064\u206a-\u206f"
    "\u3164\ufeff\uffa0\ufff9-\ufffb\U000e0000-\U000e007f"
)
"""Zero-width and other invisible formatting characters (soft hyphen, ZWSP/ZWJ, marks, word
joiner, line separators, Hangul fillers, BOM, tag characters that can smuggle ASCII)."""

_PROSE_UNSAFE = re.compile(f"[{_C0_C1}{_SURROGATES}{_BIDI}]")
_LINE_UNSAFE = re.compile(f"[{_C0_C1}{_SURROGATES}{_BIDI}{_INVISIBLE}]")
_NAME_UNSAFE = re.compile(f"[\t\n{_C0_C1}{_SURROGATES}{_BIDI}{_INVISIBLE}]")
_CONTROL = re.compile(f"[{_C0_C1}]")
_FORMAT = re.compile(f"[{_SURROGATES}{_BIDI}{_INVISIBLE}]")

# ECMA-48 sequences, for output only. A string's body stops at the next ESC, so an
# unterminated one costs one scan up to it, never a scan to the end per start.
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"  # CSI
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"  # strings
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]"  # two-character escapes (ESC c, ESC 7, ESC ( B, ...)
)
_LINE_END_CR = re.compile(r"\r\n?")


def _code(char: str) -> str:
    """A character as a visible escape: \\x9b, \\u202e, \\U000e0041."""
    point = ord(char)
    if point < 0x100:  # pragma: no mutate (no shown character is U+0100)
        return f"\\x{point:02x}"
    if point < 0x10000:  # pragma: no mutate (no shown character is U+10000)
        return f"\\u{point:04x}"
    return f"\\U{point:08x}"


def _show(match: re.Match[str]) -> str:
    char = match.group()
    return _PICTURES.get(char) or _code(char)


def _show_prose(match: re.Match[str]) -> str:
    char = match.group()
    return "" if char == "\r" else (_PICTURES.get(char) or _code(char))


def safe_text(text: str) -> str:
    """Prose made terminal-safe: controls shown (␛, \\x9b), CR dropped, bidi controls shown."""
    # Nearly every chunk is clean: one C-level scan, and the same object back.
    if _PROSE_UNSAFE.search(text) is None:
        return text
    return _PROSE_UNSAFE.sub(_show_prose, text)


def safe_line(text: str) -> str:
    """Text the user must read exactly: every control and invisible character shown."""
    if _LINE_UNSAFE.search(text) is None:
        return text
    return _LINE_UNSAFE.sub(_show, text)


def safe_name(text: str) -> str:
    """A name on one row: every control (newline and tab too) and invisible character shown."""
    if _NAME_UNSAFE.search(text) is None:
        return text
    return _NAME_UNSAFE.sub(_show, text)


def safe_output(text: str) -> str:
    """Tool output or file contents: CR line ends as LF, escape sequences dropped, then safe."""
    if _PROSE_UNSAFE.search(text) is None:
        return text
    text = _SEQUENCE.sub("", _LINE_END_CR.sub("\n", text))
    return safe_text(text)


def has_hidden(text: str) -> bool:
    """Whether `text` holds a control or invisible character that `safe_line` would show."""
    return _LINE_UNSAFE.search(text) is not None


HIDDEN_LISTED = 4
"""How many distinct hidden characters the warning names."""


def hidden_warning(text: str) -> str | None:
    """A sentence naming the hidden characters in `text` as they are shown, or None."""
    controls = _CONTROL.findall(text)
    invisible = _FORMAT.findall(text)
    if not controls and not invisible:
        return None
    parts = []
    for found, noun in ((controls, "control character"), (invisible, "invisible character")):
        if found:
            shown = list(dict.fromkeys(safe_line(char) for char in found))
            listed = ", ".join(shown[:HIDDEN_LISTED])
            if len(shown) > HIDDEN_LISTED:
                listed += ", …"
            parts.append(f"{len(found)} {noun}{'s' if len(found) > 1 else ''} ({listed})")
    return (
        f"Hidden characters: this contains {' and '.join(parts)}, which a terminal would "
        "hide or act on; here they are shown as symbols."
    )

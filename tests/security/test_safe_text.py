"""The terminal-safe text functions (hermes_tui/safe_text.py), on their own (H1)."""

from __future__ import annotations

import itertools
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes_tui.safe_text import has_hidden, hidden_warning, safe_line, safe_output, safe_text

SANITISERS = [safe_text, safe_line, safe_output]
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
INVISIBLE = "\u00ad\u200b\u200c\u200d\u200e\u200f\u2060\ufeff\U000e0041\u3164"


def terminal_controls(text: str) -> list[str]:
    """What a terminal would act on or could not encode: C0 but newline and tab, DEL, C1,
    lone surrogates, and the bidi controls that reorder a line."""
    return [
        char
        for char in text
        if (ord(char) < 0x20 and char not in "\n\t")
        or 0x7F <= ord(char) <= 0x9F
        or 0xD800 <= ord(char) <= 0xDFFF
        or char in BIDI
    ]


# Text rich in what attackers use: every C0/C1 control, ESC sequences' pieces, bidi and
# invisible characters, surrogates, markup brackets, next to ordinary letters.
hostile_chars = st.one_of(
    st.characters(min_codepoint=0, max_codepoint=0x9F),
    st.sampled_from(list(BIDI + INVISIBLE + "\x1b[]\\;P^_X0123456789mHJ\x07\r\n\t")),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    st.characters(),
)
hostile_text = st.text(hostile_chars, max_size=200)
printable_text = st.text(
    st.characters(
        blacklist_categories=("Cc", "Cf", "Cs", "Zl", "Zp"), blacklist_characters="\u3164"
    ).filter(lambda c: c not in "\u115f\u1160\uffa0"),
    max_size=200,
).map(lambda text: text.replace("a", "a\n").replace("b", "\tb"))


@pytest.mark.parametrize("sanitise", SANITISERS)
@given(text=hostile_text)
def test_output_holds_no_terminal_control_but_newline_and_tab(sanitise, text):
    shown = sanitise(text)
    assert terminal_controls(shown) == []
    shown.encode("utf-8")  # never a lone surrogate: printing it cannot fail
    assert sanitise(shown) == shown


@given(text=hostile_text)
def test_a_line_shows_every_invisible_character_too(text):
    shown = safe_line(text)
    assert not has_hidden(shown)
    assert not any(char in INVISIBLE for char in shown)


@pytest.mark.parametrize("sanitise", SANITISERS)
@given(text=printable_text)
def test_printable_text_passes_unchanged(sanitise, text):
    assert sanitise(text) == text
    assert not has_hidden(text) and hidden_warning(text) is None


@pytest.mark.parametrize("sanitise", [safe_text, safe_line])
@given(text=hostile_text, cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=6))
def test_streamed_pieces_give_what_the_whole_gives(sanitise, text, cuts):
    """A stream split anywhere (the answer, headless stdout) shows what the final text shows."""
    bounds = [0, *sorted(min(cut, len(text)) for cut in cuts), len(text)]
    pieces = [text[a:b] for a, b in itertools.pairwise(bounds)]
    assert "".join(sanitise(piece) for piece in pieces) == sanitise(text)


def test_clean_text_is_the_same_object():
    text = "an ordinary answer, with `code` and [links](x)\n\tand tabs"
    assert safe_text(text) is text and safe_line(text) is text and safe_output(text) is text


def test_a_hidden_cursor_move_is_shown():
    assert safe_line("touch X #\x1b[19Dls -la") == "touch X #␛[19Dls -la"
    assert safe_text("touch X #\x1b[19Dls -la") == "touch X #␛[19Dls -la"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b]0;pwned\x07", "␛]0;pwned␇"),  # OSC title, BEL-terminated
        ("\x1b]52;c;Y3VybA==\x1b\\", "␛]52;c;Y3VybA==␛\\"),  # OSC clipboard, ST-terminated
        ("\x1bP1$r\x1b\\", "␛P1$r␛\\"),  # DCS
        ("\x1b_apc\x1b\\ \x1b^pm\x1b\\ \x1bXsos\x1b\\", "␛_apc␛\\ ␛^pm␛\\ ␛Xsos␛\\"),
        ("\x1b", "␛"),  # a lone ESC
        ("\x9b2J \x9d0;t\x9c \x90q\x9c", "\\x9b2J \\x9d0;t\\x9c \\x90q\\x9c"),  # C1 forms
        ("a\x00b\x08c\x7fd", "a␀b␈c␡d"),
        ("rtl \u202etxt.exe", "rtl \\u202etxt.exe"),
        ("x\ud800y", "x\\ud800y"),
    ],
)
def test_sequences_are_shown_as_visible_text(raw, shown):
    assert safe_line(raw) == shown


def test_carriage_returns():
    # Prose: a CR could only hide what follows it, so it goes; CRLF becomes LF.
    assert safe_text("one\r\ntwo\rthree") == "one\ntwothree"
    # A command or a title: shown, as the shell reads it.
    assert safe_line("ls\rrm -rf ~") == "ls␍rm -rf ~"
    # Output: a progress line's CR is a line break.
    assert safe_output("10%\r20%\r\ndone") == "10%\n20%\ndone"


def test_output_drops_whole_sequences():
    coloured = "\x1b[1;32mpassed\x1b[0m \x1b]0;t\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1bc!"
    assert safe_output(coloured) == "passed link !"
    # What is left of an unterminated or broken one is shown, never sent.
    assert terminal_controls(safe_output("a\x1b]0;never ends\x1b")) == []


def test_line_shows_invisible_characters():
    assert safe_line("a\u200bb\U000e0041") == "a\\u200bb\\U000e0041"
    assert safe_text("a\u200db") == "a\u200db"  # prose keeps joiners (emoji, scripts)
    assert has_hidden("a\u200bb") and has_hidden("a\rb") and not has_hidden("a\n\tb")


def test_hidden_warning_names_what_it_found():
    warning = hidden_warning("touch X #\x1b[19Dls -la")
    assert warning is not None
    assert "1 control character (␛)" in warning and "invisible" not in warning
    both = hidden_warning("a\x1b\x07\x1b\u202e")
    assert both is not None
    assert "3 control characters (␛, ␇)" in both and "1 invisible character (\\u202e)" in both


def test_hidden_warning_is_one_exact_sentence_that_lists_at_most_four():
    """H1: the warning names up to four distinct characters as shown, then an ellipsis; the
    count is of every one found, plural from two."""
    tail = ", which a terminal would hide or act on; here they are shown as symbols."
    assert hidden_warning("a\x01\x02\x03\x04b") == (
        f"Hidden characters: this contains 4 control characters (␁, ␂, ␃, ␄){tail}"
    )
    assert hidden_warning("a\x01\x02\x03\x04\x05\x01b") == (
        f"Hidden characters: this contains 6 control characters (␁, ␂, ␃, ␄, …){tail}"
    )
    assert hidden_warning("a\x01\x01\u200b") == (
        "Hidden characters: this contains 2 control characters (␁) and 1 invisible character "
        f"(\\u200b){tail}"
    )


def test_hostile_strings_take_linear_time():
    # An unterminated string start per two characters: a naive pattern rescans to the end
    # from each one (quadratic: hours); this must stay well under a second or so.
    hostile = "\x1b]" * 200_000 + "\x1b[" + "1;" * 200_000
    started = time.perf_counter()
    for sanitise in SANITISERS:
        assert terminal_controls(sanitise(hostile)) == []
    assert time.perf_counter() - started < 10

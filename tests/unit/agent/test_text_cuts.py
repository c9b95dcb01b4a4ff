"""The two ways text is cut (agent/text_cuts.py): what an attachment, an instruction file
and a label each keep (P1, P2)."""

from __future__ import annotations

from agent.text_cuts import cut_at_line_end, cut_with_ellipsis


def test_a_file_is_cut_at_its_last_line_end_in_the_second_half():
    text = "first line\nsecond line\nthird"
    assert cut_at_line_end(text, len(text)) == text
    assert cut_at_line_end(text, 24) == "first line\nsecond line\n"


def test_a_file_with_no_line_end_near_keeps_every_character_it_may():
    text = "one very long line\nx"
    assert cut_at_line_end(text, 12) == "one very lon"  # the line end is past the cap
    assert cut_at_line_end("ab\n" + "c" * 20, 10) == "ab\nccccccc"  # too early a line end


def test_a_label_cut_ends_in_an_ellipsis_within_its_width():
    assert cut_with_ellipsis("short", 5) == "short"
    assert cut_with_ellipsis("longer", 5) == "long…"
    assert len(cut_with_ellipsis("x" * 400, 300)) == 300

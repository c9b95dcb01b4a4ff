"""The summary request's budget, prompt and transcript cut (agent/summary.py)."""

from __future__ import annotations

from agent.messages import Message
from agent.summary import CUT_MARK, fit, render_transcript, transcript_room, words_for


def test_fit_cuts_the_longest_texts_first_and_keeps_short_ones_whole():
    texts = ["a" * 10, "b" * 1000, "c" * 20, "d" * 500]
    out = fit(texts, 400)
    assert out[0] == texts[0] and out[2] == texts[2]
    assert out[1].endswith(CUT_MARK) and out[3].endswith(CUT_MARK)
    assert len(out[1]) == len(out[3])  # one common length for the cut ones
    assert sum(map(len, out)) <= 400
    assert fit(texts, 10_000) == texts


def test_the_transcript_is_cut_to_its_room():
    messages = [Message("user", "x" * 5000), Message("assistant", "y" * 5000)]
    text = render_transcript(messages, max_chars=2000)
    assert len(text) < 2200 and text.count(CUT_MARK) == 2
    assert "x" * 5000 in render_transcript(messages)


def test_the_room_leaves_the_output_budget_in_the_window():
    room = transcript_room(window=2048, budget=256, system="s" * 400)
    assert room == (2048 - 256 - 64) * 4 - 400
    assert transcript_room(100, 256, "") > 0  # never nothing


def test_the_length_asked_for_follows_the_budget():
    assert words_for(256) == 192 and words_for(10) == 20

"""`permissions:` in config.yaml (SPEC N3): checked rules, one-sentence line-numbered errors."""

from __future__ import annotations

import pytest

from agent.config import ConfigError, load_config


def write(home, text: str) -> None:
    (home / "config.yaml").write_text(text, encoding="utf-8")


def test_the_three_lists_are_read(hermes_home):
    write(
        hermes_home,
        "permissions:\n  allow: [run_shell(pytest *), mcp__git__*]\n"
        "  ask: [run_shell(git push *)]\n  deny: [edit_file(.env)]\n",
    )
    rules = load_config(hermes_home).permissions
    assert rules.allow == ("run_shell(pytest *)", "mcp__git__*")
    assert rules.lists()["deny"] == ("edit_file(.env)",)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("permissions:\n  allow:\n    - run_shell(* x)\n", "line 2: `permissions.allow` lists"),
        ("permissions:\n  deny: [run_shell(rm * x)]\n", "* may only stand alone"),
        ("permissions:\n  allow: [run_shell(pytest *)]\n  alow: []\n", "line 3: unknown key"),
        ("permissions:\n  allow: run_shell(pytest *)\n", "permissions.allow"),
    ],
)
def test_a_bad_rule_or_key_is_one_sentence_with_its_line(hermes_home, text, says):
    write(hermes_home, text)
    with pytest.raises(ConfigError) as caught:
        load_config(hermes_home)
    message = str(caught.value)
    assert says in message and "Traceback" not in message and message.count("\n") == 0

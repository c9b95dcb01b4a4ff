"""The small things a new user reads (issue 17 item 10): `run` without a task is bad usage
(exit 2), every option says what it does in the user's words, config type errors read as
English, and search snippets are one line of plain words."""

from __future__ import annotations

import argparse
import os

import pytest
import yaml
from headless_inprocess import run_cli_in_process

from agent.config import ConfigError, load_config
from hermes_tui.cli import build_parser
from hermes_tui.exit_codes import USAGE
from hermes_tui.headless import plain_snippet


def test_run_without_a_task_is_bad_usage(hermes_home):
    # main() sets up the process's logging: run_cli_in_process takes it back after.
    proc = run_cli_in_process(["run"], env=dict(os.environ))
    assert proc.returncode == USAGE == 2
    err = proc.stderr
    assert err.count("\n") == 1 and "give a task" in err.lower() and "--resume" in err


def parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from parsers(sub)


def test_every_option_has_help_and_no_internal_name_shows():
    for parser in parsers(build_parser()):
        for action in parser._actions:
            if isinstance(
                action, argparse._HelpAction | argparse._VersionAction | argparse._SubParsersAction
            ):
                continue
            assert action.help, (parser.prog, action.option_strings or action.dest)
        text = parser.format_help()
        for internal in ("RUN_MODEL", "RUN_RESUME", "sessions_command", "LIMIT"):
            assert internal not in text, (parser.prog, internal)


@pytest.mark.parametrize(
    ("setting", "words"),
    [({"max_iterations": "many"}, "must be an integer"), ({"max_retries": 2.5}, "an integer")],
)
def test_a_setting_of_the_wrong_type_reads_as_english(hermes_home, setting, words):
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"agent": setting}))
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert words in str(caught.value) and "a int" not in str(caught.value)


def test_a_search_snippet_is_one_line_of_plain_words():
    snippet = "## Connecting **a real** provider\n\n```yaml\nmodel: `openai:gpt-4.1`\n- one\n> two"
    assert plain_snippet(snippet) == "Connecting a real provider model: openai:gpt-4.1 one two"
    assert plain_snippet("keep api_key_env and 2*3") == "keep api_key_env and 2*3"

"""agent/gitsafe.py: the environment every git run gets keeps all config but ours out (H8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent import gitsafe


def test_the_parents_git_settings_are_dropped_and_cannot_be_put_back(monkeypatch, tmp_path):
    for name, value in {
        "GIT_DIR": "/elsewhere", "GIT_CONFIG_PARAMETERS": "'core.fsmonitor=/x'",
        "GIT_CONFIG_COUNT": "1", "GIT_EXTERNAL_DIFF": "/x", "GIT_SSH_COMMAND": "/x",
        "GIT_ASKPASS": "/x", "SSH_ASKPASS": "/x", "PAGER": "/x", "HOME": "/home/someone",
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    ours = tmp_path / "repo"
    env = gitsafe.inert_env(ours, work_tree=tmp_path, extra={"GIT_CONFIG_GLOBAL": "/x"})
    fixed = set(gitsafe.inert_env(Path("/r")))  # GIT_DIR, and what makes git inert
    assert {k for k in env if k.startswith("GIT_")} == {
        k for k in fixed if k.startswith("GIT_")
    } | {"GIT_WORK_TREE"}
    assert env["GIT_DIR"] == str(ours) and env["HOME"] == str(ours)
    assert env["GIT_CONFIG_GLOBAL"] == "/dev/null" and env["GIT_CONFIG_NOSYSTEM"] == "1"
    assert env["GIT_ALLOW_PROTOCOL"] == "" and env["GIT_OPTIONAL_LOCKS"] == "0"
    assert "SSH_ASKPASS" not in env and "PAGER" not in env


def test_a_run_without_the_inert_environment_is_refused(tmp_path):
    with pytest.raises(ValueError, match="inert_env"):
        gitsafe.run(["status"], {"PATH": "/usr/bin"}, tmp_path, timeout=5)


def test_the_command_line_switches_hooks_and_fsmonitor_off_before_ours():
    argv = gitsafe._argv(["status"], ["core.fsmonitor=true"])
    assert argv[:2] == ["git", "--no-pager"] and argv[-1] == "status"
    pairs = argv[3:-1:2]
    assert pairs[: len(gitsafe.INERT_SETTINGS)] == list(gitsafe.INERT_SETTINGS)
    assert "core.hooksPath=/dev/null" in pairs and "protocol.allow=never" in pairs

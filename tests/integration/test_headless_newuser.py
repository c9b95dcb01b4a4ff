"""What a new user meets in headless mode (issue 17): no silent demo, usage errors, help."""

from __future__ import annotations

import os
import sqlite3

import yaml
from headless_inprocess import run_cli_in_process


def run_cli(home, *args, env=None):
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    environ.pop("MY_KEY", None)
    environ.update(env or {}, HERMES_TUI_HOME=str(home))
    # In this process (tests/headless_inprocess.py): what the run says, not the process, is
    # tested; in an empty folder of the test's, never the checkout the suite runs from.
    workspace = home.parent / "workspace"
    workspace.mkdir(exist_ok=True)
    return run_cli_in_process(list(args), env=environ, cwd=workspace)


def hosted_without_key(home) -> None:
    provider = {"kind": "openai", "base_url": "https://api.openai.com/v1", "api_key_env": "MY_KEY"}
    config = {"model": "openai:gpt-4.1", "providers": {"openai": provider}}
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


def test_a_configured_model_without_its_key_is_an_error_not_the_demo(hermes_home):
    hosted_without_key(hermes_home)
    proc = run_cli(hermes_home, "run", "hi")
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert proc.stdout == "", "no scripted tour, no fake answer"
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hermes-tui: No API key for provider openai")
    assert "MY_KEY" in lines[0]
    db = hermes_home / "state.db"
    if db.exists():  # nothing was stored for a turn that never started
        conn = sqlite3.connect(db)
        try:
            assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 0
        finally:
            conn.close()


def test_demo_still_runs_on_request_with_a_model_configured(hermes_home):
    hosted_without_key(hermes_home)
    proc = run_cli(hermes_home, "run", "--demo", "hi")
    assert proc.returncode == 0, proc.stderr
    assert "demo model" in proc.stdout


def test_the_demo_tour_shows_the_yaml_for_the_config_file(hermes_home):
    proc = run_cli(hermes_home, "run", "hi")
    assert proc.returncode == 0, proc.stderr
    # Where the file lives, by name: the same tour for every user, no machine path.
    assert "`config.yaml` (in `$HERMES_TUI_HOME`" in " ".join(proc.stdout.split())
    assert str(hermes_home) not in proc.stdout
    assert "model: openai:gpt-4.1" in proc.stdout and "api_key_env: OPENAI_API_KEY" in proc.stdout
    assert "from openai import OpenAI" not in proc.stdout


def test_resuming_a_session_from_another_folder_says_where_its_tools_run(hermes_home, tmp_path):
    from integration.test_headless_errors import run_cli as run_in

    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    assert run_in(hermes_home, "run", "--demo", "hello", cwd=first).returncode == 0
    proc = run_in(hermes_home, "run", "--demo", "--resume", "hello", "again", cwd=second)
    assert proc.returncode == 0, proc.stderr
    assert f"this session worked in {first}; its tools run here, in {second}." in proc.stderr

"""A hostile repository against every git the app runs (H8).

A work tree whose `.git/config` (and the user's `~/.gitconfig`) names a program for each
key git would run one for: fsmonitor, hooks, pager, external diff, filters, textconv, ssh
command, credential helper, `include`/`includeIf` files that set fsmonitor, and an `ext::`
url. Each program only leaves a marker file. Plain git (the test's own) proves each key is
armed; then the app, at start-up (the picker's index), on `@`, at each turn's end (the
index rebuilt, the checkpoint taken), on `/diff`, `/export` and `/rewind`, leaves no marker.
So does a `.git` a sandboxed `run_shell` creates during an `auto-edit` turn.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
import yaml
from ui.tui_helpers import FIXED_NOW, TEST_ARM_SECONDS, quick_probes, reply, run_turn, write_config
from waits import wait_until

from agent import gitsafe
from agent.checkpoints.restore import apply_changes
from agent.checkpoints.shadow import ShadowRepo
from agent.gitlist import inert_work_tree, list_files
from hermes_tui.completion import index as index_module

pytestmark = pytest.mark.skipif(not gitsafe.available(), reason="needs the git binary")

TIMEOUT = 20.0
URL = "https://example.invalid/repo"


def _script(path: Path, marker: Path) -> str:
    """An executable that leaves `marker` (and passes its input through, as a filter would)."""
    path.write_text(f'#!/bin/sh\necho "$0 $*" >> "{marker}"\nexit 1\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _keys(bin_dir: Path, marks: Path) -> dict[str, str]:
    """Each key's lines of git config, its program leaving `marks/<key>`."""
    bin_dir.mkdir(exist_ok=True)
    run = {key: _script(bin_dir / f"{key}.sh", marks / key) for key in _TRIGGERS}
    hooks = bin_dir / "hooks"
    hooks.mkdir(exist_ok=True)
    for hook in ("pre-commit", "post-commit", "post-index-change", "reference-transaction"):
        _script(hooks / hook, marks / "hooks")
    included = {}
    for key in ("include", "include-if"):
        included[key] = bin_dir / f"{key}.cfg"
        included[key].write_text(f'[core]\n\tfsmonitor = "{run[key]}"\n')
    return {
        "fsmonitor": f'[core]\n\tfsmonitor = "{run["fsmonitor"]}"\n',
        "hooks": f'[core]\n\thooksPath = "{hooks}"\n',
        "pager": f'[core]\n\tpager = "{run["pager"]}"\n[pager]\n\tlog = "{run["pager"]}"\n',
        "diff-external": f'[diff]\n\texternal = "{run["diff-external"]}"\n',
        "filter": (
            f'[filter "evil"]\n\tclean = "{run["filter"]}"\n\tsmudge = "{run["filter"]}"\n'
            f'\tprocess = "{run["filter"]}"\n'
        ),
        "textconv": f'[diff "evil"]\n\ttextconv = "{run["textconv"]}"\n',
        "ssh": f'[core]\n\tsshCommand = "{run["ssh"]}"\n',
        "credential": f'[credential]\n\thelper = "{run["credential"]}"\n',
        "include": f'[include]\n\tpath = "{included["include"]}"\n',
        "include-if": "",  # needs the repository's path: see _arm
        "ext-protocol": (
            f'[protocol "ext"]\n\tallow = always\n[protocol]\n\tallow = always\n'
            f'[url "ext::{run["ext-protocol"]}"]\n\tinsteadOf = {URL}\n'
        ),
    }


_TRIGGERS: dict[str, list[str]] = {
    "fsmonitor": ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
    "hooks": ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x", "--allow-empty"],
    "pager": ["-p", "log"],
    "diff-external": ["diff"],
    "filter": ["add", "a.txt"],
    "textconv": ["diff"],
    "ssh": ["fetch", "ssh://example.invalid/repo"],
    "credential": ["credential", "fill"],
    "include": ["status"],
    "include-if": ["status"],
    "ext-protocol": ["ls-remote", URL],
}
"""For each key, a git command that runs its program when git reads the key."""


def _plain_git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**env, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}


def _git(ws: Path, args: list[str], env: dict[str, str], *, tty: bool = False) -> None:
    """Run the test's own git in `ws` (on a terminal for the pager), whatever it exits with."""
    stdin = b"protocol=https\nhost=example.invalid\n\n"
    if not tty:
        subprocess.run(
            ["git", *args], cwd=ws, env=env, input=stdin, capture_output=True, timeout=TIMEOUT
        )
        return
    main, side = os.openpty()
    try:
        subprocess.run(
            ["git", *args],
            cwd=ws,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=side,
            stderr=side,
            timeout=TIMEOUT,
        )
    finally:
        os.close(side)
        os.close(main)


def _arm(ws: Path, tmp_path: Path, keys: list[str]) -> Path:
    """Make `ws` a repository with one commit, then arm `keys`; returns the marks folder."""
    marks = tmp_path / "marks"
    marks.mkdir()
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = _plain_git_env(home)
    (ws / "a.txt").write_text("one\n")
    (ws / ".gitattributes").write_text("* filter=evil diff=evil\n")
    for args in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", *args], cwd=ws, env=env, check=True, timeout=TIMEOUT)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"],
        cwd=ws,
        env=env,
        check=True,
        timeout=TIMEOUT,
        capture_output=True,
    )
    (ws / ".git" / "info").mkdir(exist_ok=True)
    (ws / ".git" / "info" / "exclude").write_text("excluded.txt\n")
    (ws / "excluded.txt").write_text("only git leaves this out\n")
    (ws / "a.txt").write_text("two\n")
    lines = _keys(tmp_path / "bin", marks)
    gitdir = (ws / ".git").resolve()
    lines["include-if"] = (
        f'[includeIf "gitdir:{gitdir}"]\n\tpath = "{tmp_path}/bin/include-if.cfg"\n'
    )
    with (ws / ".git" / "config").open("a") as config:
        config.write("".join(lines[key] for key in keys))
    # The user's own configuration is no safer: git must not read it either.
    (home / ".gitconfig").write_text(lines["fsmonitor"].replace("fsmonitor.sh", "user.sh"))
    _script(tmp_path / "bin" / "user.sh", marks / "user-config")
    return marks


def _ran(marks: Path) -> list[str]:
    return sorted(os.listdir(marks))


@pytest.mark.parametrize("key", list(_TRIGGERS))
def test_each_armed_key_runs_under_plain_git_and_never_under_the_apps(key, tmp_path):
    """H8: plain git runs the key's program; the app's listing, snapshots, restore, and the
    same command through the app's inert view of the work tree, run nothing."""
    ws = tmp_path / "ws"
    ws.mkdir()
    marks = _arm(ws, tmp_path, [key])
    _git(ws, _TRIGGERS[key], _plain_git_env(tmp_path / "home"), tty=key == "pager")
    assert key in _ran(marks), f"the {key} fixture is not armed: {_ran(marks)}"
    for ran in marks.iterdir():
        ran.unlink()

    listed = list_files(ws)
    assert listed is not None and "a.txt" in listed and "excluded.txt" not in listed
    repo = ShadowRepo(ws, tmp_path / "checkpoints")
    first, _ = repo.snapshot()
    (ws / "a.txt").write_text("three\n")
    now, _ = repo.snapshot()
    apply_changes(repo, ws, repo.changes(now, first))
    assert (ws / "a.txt").read_text() == "two\n"
    with inert_work_tree(ws) as env:
        assert env is not None
        if key == "pager":
            _git(ws, _TRIGGERS[key], env, tty=True)
        else:
            stdin = b"protocol=https\nhost=example.invalid\n\n"
            gitsafe.run(_TRIGGERS[key], env, ws, timeout=TIMEOUT, stdin=stdin)
    assert _ran(marks) == []


def test_a_worktree_and_its_main_repository_are_listed_inert(tmp_path):
    """H8: a linked worktree (a `.git` file, a `commondir`) is listed by git, inert."""
    ws = tmp_path / "ws"
    ws.mkdir()
    marks = _arm(ws, tmp_path, ["fsmonitor"])
    linked = tmp_path / "linked"
    env = _plain_git_env(tmp_path / "home")
    env["GIT_CONFIG_GLOBAL"] = "/dev/null"
    subprocess.run(
        ["git", "-c", "core.fsmonitor=false", "worktree", "add", "-q", str(linked)],
        cwd=ws,
        env=env,
        check=True,
        timeout=TIMEOUT,
        capture_output=True,
    )
    (linked / "new.txt").write_text("new\n")
    assert sorted(list_files(linked) or []) == [".gitattributes", "a.txt", "new.txt"]
    assert _ran(marks) == []


# -- the whole app -------------------------------------------------------------------------


def _app(hermes_home: Path, workspace: Path, server, *, sandbox: str, approval: str):
    from agent.config import load_config
    from hermes_tui.app import HermesApp

    write_config(
        hermes_home,
        server.openai_base_url,
        retry_base_seconds=0.01,
        system_prompt="You are a test agent.",
        approval=approval,
    )
    config = yaml.safe_load((hermes_home / "config.yaml").read_text())
    config["sandbox"] = sandbox
    (hermes_home / "config.yaml").write_text(yaml.safe_dump(config))
    probes = quick_probes(
        now=lambda: FIXED_NOW, clock=lambda: 0.0, approval_arm_seconds=TEST_ARM_SECONDS
    )
    return HermesApp(load_config(), workspace=workspace, probes=probes)


def _write(path: str, content: str, call_id: str) -> dict:
    arguments = {"path": path, "content": content}
    return reply("", tool_calls=[{"id": call_id, "name": "write_file", "arguments": arguments}])


async def _index_rebuilt(pilot, app, version: int) -> None:
    index = app.completion.index
    await wait_until(
        pilot,
        lambda: index.version > version and index._thread is None,
        what="the picker's index rebuilt",
        timeout=TIMEOUT,
    )


async def _turn_settled(pilot, app, version: int) -> None:
    await _index_rebuilt(pilot, app, version)
    await app.changes.wait()
    await pilot.pause()


async def _command(pilot, app, text: str) -> None:
    await app.submit(text)
    await pilot.pause()
    await app.changes.wait()
    await pilot.pause()


@pytest.mark.parametrize("how", ["direct", "included"])
async def test_the_app_runs_nothing_a_hostile_repository_names(
    how, scripted, hermes_home, tmp_path, monkeypatch
):
    """H8: start-up, `@`, two turns' ends, /diff, /rewind and /export: no marker."""
    from hermes_tui.screens.rewind import RewindScreen

    monkeypatch.setattr(index_module, "STALE_SECONDS", 0.0)  # each turn's end lists again

    ws = tmp_path / "ws"
    ws.mkdir()
    keys = [k for k in _TRIGGERS if k not in ("include", "include-if")]
    marks = _arm(ws, tmp_path, keys if how == "direct" else ["include", "include-if"])
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    server = scripted(
        {
            "replies": [
                _write("one.txt", "1\n", "w1"),
                reply("first done"),
                _write("a.txt", "changed\n", "w2"),
                reply("second done"),
            ]
        }
    )
    app = _app(hermes_home, ws, server, sandbox="off", approval="yolo")
    async with app.run_test(size=(120, 40)) as pilot:
        index = app.completion.index
        await wait_until(pilot, lambda: index.ready, what="the first listing", timeout=TIMEOUT)
        assert "a.txt" in index.paths and "excluded.txt" not in index.paths  # git listed it
        assert _ran(marks) == [], "start-up"
        await pilot.press("@")
        await wait_until(pilot, lambda: app.completion.picking, what="the picker")
        assert _ran(marks) == [], "@"
        await pilot.press("escape")
        app.composer.load_text("")
        for text in ("first", "second"):
            version = index.version
            await run_turn(pilot, text)
            await _turn_settled(pilot, app, version)
            assert _ran(marks) == [], f"the end of turn {text}"
        assert "one.txt" in index.paths
        await _command(pilot, app, "/diff")
        assert _ran(marks) == [], "/diff"
        await app.submit("/rewind")
        await wait_until(pilot, lambda: isinstance(app.screen, RewindScreen), what="the rewind")
        await pilot.press("enter")  # the newest turn
        await pilot.press("enter")  # code and conversation
        await app.changes.wait()
        await pilot.pause()
        assert (ws / "a.txt").read_text() == "two\n"
        version = index.version
        index.refresh(force=True)
        await _index_rebuilt(pilot, app, version)
        assert _ran(marks) == [], "/rewind"
        await _command(pilot, app, "/export")
        assert _ran(marks) == [], "/export"


async def test_a_git_folder_made_in_a_sandboxed_turn_runs_nothing_after_it(
    scripted, hermes_home, tmp_path, monkeypatch
):
    """H8: in auto-edit with the sandbox on, `run_shell` needs no dialog to make a `.git`
    with an fsmonitor; after the turn, the app's git (the index, the checkpoint) runs none
    of it outside the sandbox."""
    from agent.tools.sandbox import probe

    if not probe().works:
        pytest.skip(f"no sandbox here: {probe().reason}")
    monkeypatch.setattr(index_module, "STALE_SECONDS", 0.0)  # the turn's end lists again
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("mine\n")
    marker = tmp_path / "ran"
    monkeypatch.setenv("HOME", str(tmp_path))
    command = (
        f"printf '#!/bin/sh\\necho ran >> {marker}\\nexit 1\\n' > x.sh && chmod +x x.sh && "
        'git init -q . && git config core.fsmonitor "$PWD/x.sh"'
    )
    shell = {"id": "s1", "name": "run_shell", "arguments": {"command": command}}
    server = scripted({"replies": [reply("", tool_calls=[shell]), reply("done")]})
    app = _app(hermes_home, ws, server, sandbox="on", approval="auto-edit")
    async with app.run_test(size=(120, 40)) as pilot:
        index = app.completion.index
        await wait_until(pilot, lambda: index.ready, what="the first listing", timeout=TIMEOUT)
        version = index.version
        await run_turn(pilot, "make a repository")
        await _turn_settled(pilot, app, version)
        assert "x.sh" in (ws / ".git" / "config").read_text()  # the turn made it, unasked
        assert "x.sh" in index.paths  # listed by git from the new repository
        version = index.version
        index.refresh(force=True)
        await _index_rebuilt(pilot, app, version)
        await pilot.press("@")
        await wait_until(pilot, lambda: app.completion.picking, what="the picker")
    assert not marker.exists(), marker.read_text()

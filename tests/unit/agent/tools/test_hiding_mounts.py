"""What the sandbox hides, as bubblewrap arguments (H9): built in-process, so every rule of
hiding.py is checked where bubblewrap does not run too (the real mounts are checked in
tests/security/test_hostile_sandbox_secrets.py)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from agent.tools import hiding as hiding_module
from agent.tools.hiding import CREDENTIAL_PLACES, Hiding, empty_file


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A `~` with an ssh folder, a netrc file and the app's own home."""
    root = tmp_path.resolve() / "home"
    (root / ".ssh").mkdir(parents=True)
    (root / ".ssh" / "known_hosts").write_text("example.com ssh-ed25519 AAAA\n")
    (root / ".netrc").write_text("machine x password y\n")
    (root / ".config" / "hermes-tui").mkdir(parents=True)
    (root / ".config" / "hermes-tui" / "config.yaml").write_text("providers: {}\n")
    (root / "proj").mkdir()
    return root


def test_the_mounts_come_in_the_order_bubblewrap_needs(home):
    """H9: the folder holding the workspace before its bind; the rest after, `allow_read`
    after those, and every hidden folder remounted read-only at the very end."""
    app = home / ".config" / "hermes-tui"
    hiding = Hiding((app,), hide=("~",), allow_read=("~/.ssh/known_hosts",))
    before, after = hiding.mounts(home / "proj", home)
    assert before == ["--tmpfs", str(home)]
    known_hosts = str(home / ".ssh" / "known_hosts")
    assert after == [
        "--tmpfs", str(app),
        "--ro-bind", empty_file(), str(home / ".netrc"),
        "--tmpfs", str(home / ".ssh"),
        "--ro-bind-try", known_hosts, known_hosts,
        "--remount-ro", str(home), "--remount-ro", str(app), "--remount-ro", str(home / ".ssh"),
    ]  # fmt: skip


def test_the_workspace_itself_hidden_goes_before_its_bind(home):
    before, after = Hiding(hide=("~/proj",)).mounts(home / "proj", home)
    assert before == ["--tmpfs", str(home / "proj")]
    assert after[:2] == ["--ro-bind", empty_file()] and after[-2:] == [
        "--remount-ro",
        str(home / "proj"),
    ]


def test_allow_read_of_where_a_link_leads_brings_it_back_and_nothing_after_it(home):
    """H9: `~/.ssh -> dotfiles/ssh` with `allow_read: [~/dotfiles/ssh]` is shown; the hidden
    places sorted after it are still hidden."""
    (home / ".ssh").rename(home / "dotfiles")
    (home / ".ssh").symlink_to("dotfiles")
    (home / "vault").mkdir()
    hiding = Hiding((home / "zz-app",), hide=("~/vault",), allow_read=("~/dotfiles",))
    (home / "zz-app").mkdir()
    assert "~/.ssh" in hiding.places(home)  # as written it is not brought back
    _before, after = hiding.mounts(home / "proj", home)
    tmpfs = [after[i + 1] for i, arg in enumerate(after) if arg == "--tmpfs"]
    assert tmpfs == [str(home / "vault"), str(home / "zz-app")]


def test_allow_read_never_brings_back_the_apps_home_or_anything_in_it(home):
    """H9: config.yaml holds the keys: no `allow_read` shows it, whole or in part."""
    app = home / ".config" / "hermes-tui"
    for allowed in ("~/.config", "~/.config/hermes-tui", "~/.config/hermes-tui/config.yaml"):
        _before, after = Hiding((app,), allow_read=(allowed,)).mounts(home / "proj", home)
        assert after[:2] == ["--tmpfs", str(app)], allowed
        assert "--ro-bind-try" not in after, allowed


def test_allow_read_outside_every_hidden_folder_needs_no_mount(home):
    """A place already readable is not bound again (over the workspace it would make it
    read-only); one missing inside a hidden folder is not bound either."""
    hiding = Hiding(allow_read=("~/proj", "~/.ssh/missing", str(home / ".ssh" / "known_hosts")))
    _before, after = hiding.mounts(home / "proj", home)
    known_hosts = str(home / ".ssh" / "known_hosts")
    assert [after[i + 1] for i, arg in enumerate(after) if arg == "--ro-bind-try"] == [known_hosts]


def test_places_are_as_written_less_what_allow_read_brings_back(home):
    hide = ("~/notes", "/srv/keys", "~/.ssh")
    hiding = Hiding((home / "app",), hide=hide, allow_read=("~/.aws",))
    places = hiding.places(home)
    assert places == (*[p for p in CREDENTIAL_PLACES if p != "~/.aws"], "~/notes", "/srv/keys")
    before, after = Hiding(hide=("/nonexistent/keys", "~")).mounts(home / "proj", home)
    assert "/nonexistent/keys" not in after and before == ["--tmpfs", str(home)]


def test_the_empty_file_is_made_once_and_again_when_it_is_gone_or_not_empty(monkeypatch):
    """H9: the file bound over a hidden file stays empty and read-only, and is removed at exit."""
    registered = []
    monkeypatch.setattr(hiding_module, "_EMPTY", [])
    monkeypatch.setattr(hiding_module.atexit, "register", lambda *call: registered.append(call))
    first = empty_file()
    assert empty_file() == first and os.path.getsize(first) == 0
    assert stat.S_IMODE(os.stat(first).st_mode) == 0o400
    assert Path(first).name.startswith("hermes-tui-empty-")
    Path(first).unlink()
    second = empty_file()
    assert second != first and os.path.getsize(second) == 0
    os.chmod(second, 0o600)
    Path(second).write_text("leaked")
    third = empty_file()
    assert third != second and os.path.getsize(third) == 0
    assert [args for _call, *args in registered] == [[first], [second], [third]]
    for call, name in registered:
        call(name)  # what runs at exit: the file is removed, a missing one is no error
        call(name)
        assert not os.path.exists(name)

"""H9: the sandbox hides secrets, not only the network. A command auto-edit runs unasked
reads the user's keys, the app's config.yaml and state.db, and prints them (plain or in
base64); under real bubblewrap, with a fake `~`, it gets nothing. `sandbox.allow_read`
brings a place back, `sandbox.hide` adds one."""

from __future__ import annotations

import base64
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.kinds import SandboxMode
from agent.tools.hiding import CREDENTIAL_PLACES, Hiding
from agent.tools.registry import ToolContext, default_registry
from agent.tools.sandbox import Sandbox, probe

REAL = probe()
pytestmark = pytest.mark.skipif(not REAL.works, reason=f"no sandbox here: {REAL.reason}")
SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAE\n"
CONFIG = "providers:\n  x: {api_key: sk-live-0123456789abcdef}\n"
NETRC = "machine example.com login me password hunter2-hunter2\n"


@pytest.fixture
def home(monkeypatch) -> Iterator[Path]:
    """A fake `~` with a planted ssh key, netrc, aws folder and the app's own home; outside
    /tmp, which the sandbox replaces with a private one (so it would hide them anyway)."""
    root = Path(tempfile.mkdtemp(prefix="hermes-user-", dir="/var/tmp")).resolve()
    (root / ".ssh").mkdir(parents=True)
    (root / ".ssh" / "id_rsa").write_text(SSH_KEY)
    (root / ".ssh" / "known_hosts").write_text("example.com ssh-ed25519 AAAA\n")
    (root / ".netrc").write_text(NETRC)
    (root / ".aws").mkdir()
    (root / ".aws" / "credentials").write_text("aws_secret_access_key = wJalrXUtnFEMI\n")
    app = root / ".config" / "hermes-tui"
    app.mkdir(parents=True)
    (app / "config.yaml").write_text(CONFIG)
    (app / "state.db").write_bytes(b"SQLite format 3\x00 every session of every project")
    (root / "proj").mkdir()
    monkeypatch.setenv("HOME", str(root))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def sandbox(home: Path, **hiding) -> Sandbox:
    return Sandbox(
        SandboxMode.AUTO, False, REAL, hiding=Hiding((home / ".config" / "hermes-tui",), **hiding)
    )


def run(command: str, workspace: Path, box: Sandbox) -> str:
    ctx = ToolContext(workspace=workspace, approval_mode="yolo", sandbox=box)
    return default_registry().run("run_shell", {"command": command}, ctx).output


STEAL = (
    "cat ~/.ssh/id_rsa; cat ~/.netrc; cat ~/.aws/credentials; "
    "cat ~/.config/hermes-tui/config.yaml; cat ~/.config/hermes-tui/state.db; "
    "base64 -w0 ~/.config/hermes-tui/config.yaml; "
    "echo entries=$(find ~/.ssh ~/.aws ~/.config/hermes-tui -mindepth 1 | wc -l); echo end"
)
SECRETS = ("OPENSSH", "hunter2", "wJalrXUtnFEMI", "sk-live", "SQLite")


@pytest.mark.parametrize("where", ["home", "project", "outside"])
def test_a_command_reads_nothing_of_the_keys(home, where):
    """The workspace is `~` itself (the app started there), a project in it, or elsewhere."""
    workspace = {
        "home": home,
        "project": home / "proj",
        "outside": home.with_name(f"{home.name}-ws"),
    }[where]
    workspace.mkdir(exist_ok=True)
    try:
        output = run(STEAL, workspace, sandbox(home))
        unconfined = run(STEAL, workspace, Sandbox.decide(SandboxMode.OFF))
    finally:
        if where == "outside":
            shutil.rmtree(workspace, ignore_errors=True)
    assert "entries=0\nend\n" in output, output
    for secret in (*SECRETS, base64.b64encode(CONFIG.encode()).decode()[:24]):
        assert secret not in output, (secret, output)
    # Outside the sandbox the same command reads them all: the test would see them.
    assert "OPENSSH" in unconfined


def test_the_hidden_places_cannot_be_written_either(home):
    output = run(
        "echo evil >> ~/.config/hermes-tui/config.yaml; echo k >> ~/.ssh/authorized_keys; "
        "echo x > ~/.netrc; echo fine > notes.txt",
        home,
        sandbox(home),
    )
    assert output.count("Read-only file system") == 3, output
    assert (home / ".config/hermes-tui/config.yaml").read_text() == CONFIG
    assert not (home / ".ssh" / "authorized_keys").exists()
    assert (home / ".netrc").read_text() == NETRC
    assert (home / "notes.txt").read_text() == "fine\n"  # the workspace stays writable


def test_a_hidden_place_behind_a_link_is_hidden_where_it_leads(home):
    (home / "dotfiles").mkdir()
    (home / ".ssh").rename(home / "dotfiles" / "ssh")
    (home / ".ssh").symlink_to(home / "dotfiles" / "ssh")
    output = run("cat ~/.ssh/id_rsa ~/dotfiles/ssh/id_rsa; echo end", home / "proj", sandbox(home))
    assert "OPENSSH" not in output and "end" in output


def test_allow_read_brings_a_place_back(home):
    box = sandbox(home, allow_read=("~/.ssh/known_hosts", "~/.aws"))
    output = run("cat ~/.ssh/known_hosts ~/.aws/credentials; cat ~/.ssh/id_rsa", home, box)
    assert "example.com ssh-ed25519" in output and "wJalrXUtnFEMI" in output
    assert "OPENSSH" not in output
    assert "~/.aws" not in box.hidden_places() and "~/.ssh" in box.hidden_places()
    # Brought back to read, not to write, even inside the workspace.
    assert "Read-only" in run("echo x >> ~/.ssh/known_hosts", home, box)


def test_allow_read_never_brings_the_apps_home_back(home):
    box = sandbox(home, allow_read=("~/.config",))
    assert "sk-live" not in run("cat ~/.config/hermes-tui/config.yaml", home, box)


def test_hide_adds_a_place(home):
    (home / ".secrets").mkdir()
    (home / ".secrets" / "token").write_text("tok-0123456789")
    (home / "vault.txt").write_text("vault-0123456789")
    assert "tok-0123" in run("cat ~/.secrets/token", home, sandbox(home))
    box = sandbox(home, hide=("~/.secrets", "~/vault.txt"))
    output = run("cat ~/.secrets/token ~/vault.txt; echo end", home, box)
    assert "tok-0123" not in output and "vault-0123" not in output and "end" in output


def test_hiding_all_of_home_keeps_the_workspace_inside_it(home):
    """A hidden folder that holds the workspace: the workspace shows through, writable."""
    (home / "other.txt").write_text("other-project-secret")
    box = sandbox(home, hide=("~",))
    output = run("cat ~/other.txt; echo made > made.txt && cat made.txt", home / "proj", box)
    assert "other-project-secret" not in output and "made" in output, output
    assert (home / "proj" / "made.txt").read_text() == "made\n"


def test_a_missing_place_needs_no_mount(home):
    args = sandbox(home).wrap(["true"], home / "proj")
    mounted = {args[i + 1] for i, arg in enumerate(args) if arg == "--tmpfs"}
    assert str(home / ".ssh") in mounted and str(home / ".config/hermes-tui") in mounted
    assert str(home / ".gnupg") not in mounted  # not there: nothing to hide
    assert len(CREDENTIAL_PLACES) == len(set(CREDENTIAL_PLACES))


def test_the_empty_file_comes_back_when_a_cleaner_removed_it(home):
    from agent.tools.hiding import empty_file

    Path(empty_file()).unlink()
    output = run("cat ~/.netrc; echo end", home, sandbox(home))
    assert output.startswith("end\n"), output

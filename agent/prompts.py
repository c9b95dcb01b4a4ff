"""Fixed texts the agent sends: the system prompt and the empty-answer nudge."""

from __future__ import annotations

from pathlib import Path

TODO_GUIDANCE = (
    " For a task of three or more steps, keep a todo list with the todo_write tool: write "
    "it before you start, keep one item in_progress, mark each done as you finish it. Do "
    "not make one for a question or a one-step change."
)
"""When the model should keep its todo list (N2): multi-step work, never a one-line question."""

EMPTY_ANSWER_NUDGE = "[Your previous reply was empty. Continue: answer the user, or call a tool.]"


def system_prompt(workspace: Path) -> str:
    """The system prompt: stable across a session so the provider's prompt cache holds."""
    return (
        "You are hermes, a careful coding agent working in the user's repository at "
        f"{workspace}. Use the tools to read, search and edit files and to run shell "
        "commands; paths are relative to the repository. Prefer small, verifiable steps, "
        "and say plainly what you changed. Answer in Markdown."
        f"{TODO_GUIDANCE}"
    )


def with_mode(prompt: str, mode: str | None) -> str:
    """`prompt` with what the session's mode asks of the model (plan mode: read, then propose
    a plan, N1); unchanged in any other mode, so the prompt cache holds there."""
    from agent.plans import PLAN_MODE_PROMPT

    return f"{prompt}\n\n{PLAN_MODE_PROMPT}" if mode == "plan" else prompt

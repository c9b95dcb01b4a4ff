"""User hooks (N4): the user's own commands run on tool, prompt, turn and session events.

settings.py declares `hooks:`; process.py runs one command (its own process group, a timeout,
capped output); answers.py reads its exit code and stdout as the Claude Code protocol has it;
project.py reads a project's `.hermes-tui/hooks.yaml` and the user's consent to it; engine.py
(`Hooks`) runs the hooks that match an event and combines what they said; rows.py words the
transcript's row for one run.
"""

"""Checkpoints of the workspace: the shadow repository, taking them, restoring them (X2)."""

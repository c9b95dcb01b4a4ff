"""Tools the agent can call, confined to the workspace."""

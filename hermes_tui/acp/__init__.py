"""`hermes-tui acp`: the agent as an Agent Client Protocol server over stdio (E1). No Textual."""

"""hermes-tui: the Textual front end and CLI entry point."""

"""The widgets of the hermes-tui screen."""

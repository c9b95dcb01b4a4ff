"""Modal screens: approval and help."""

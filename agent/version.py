"""The single source of hermes-tui's version and User-Agent."""

VERSION = "0.1.0"
USER_AGENT = f"hermes-tui/{VERSION}"

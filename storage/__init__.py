"""SQLite session store: no Textual, no agent imports."""

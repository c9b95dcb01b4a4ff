"""`python -m hermes_tui` runs the CLI."""

from hermes_tui.cli import main

raise SystemExit(main())

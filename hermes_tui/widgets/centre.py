"""The middle column: the transcript, the lines under it, the composer; it relays the
transcript's "new below" to the line that says so, and that line's click back."""

from __future__ import annotations

from textual.containers import Vertical

from hermes_tui.widgets.new_below import NewBelowLine
from hermes_tui.widgets.transcript import Transcript


class Centre(Vertical):
    """Transcript, new-below line, stall banner, hints, status line and composer."""

    follow_key = "ctrl+end"
    """The key that follows the transcript again, as the new-below line names it."""

    def on_transcript_new_below(self, message: Transcript.NewBelow) -> None:
        message.stop()
        self.query_one(NewBelowLine).show(message.shown, self.follow_key)

    def on_new_below_line_follow(self, message: NewBelowLine.Follow) -> None:
        message.stop()
        self.query_one(Transcript).anchor()

"""What a frame renders while an answer streams: the widgets that changed, not the screen."""

from __future__ import annotations

from collections import Counter

from textual.widget import Widget
from ui.tui_helpers import FakeClock, reply

from hermes_tui.widgets.key_bar import KeyBar
from hermes_tui.widgets.sessions_panel import SessionsPanel


async def test_a_streaming_answer_s_frames_leave_the_unchanged_panels_alone(
    make_app, scripted, monkeypatch
):
    """The spinner, the status panel's token count and the answer change in the same
    frames; the key bar and the sessions panel did not change, and are rendered a few times
    (as the turn starts and ends, and the busy row's clock), not once a frame (issue 27).
    The status panel is behind its token count, so it is rendered whenever that moves."""
    text = "\n\n".join(f"Paragraph {n}: " + "words to wrap " * 12 for n in range(40))
    server = scripted({"replies": [reply(text, chunk_size=40, delay=0.01)]})
    app = make_app(server)
    rendered: Counter[str] = Counter()
    frames = 0
    render_lines = Widget.render_lines

    def counting_render_lines(self, crop):
        nonlocal frames
        if isinstance(self, KeyBar | SessionsPanel):
            rendered[type(self).__name__] += 1
        elif self is self.screen:  # the screen is in every frame: one a frame
            frames += 1
        return render_lines(self, crop)

    async with app.run_test(size=(140, 40)) as pilot:
        await app.ready()
        # The busy row's clock stands still: on a loaded machine the stream took seconds, and
        # each second redrew the sessions panel (rightly: its words changed).
        app.probes.clock = FakeClock()
        await pilot.pause()
        monkeypatch.setattr(Widget, "render_lines", counting_render_lines)
        await app.submit("go")
        await app.wait_for_turn()
        await pilot.pause()
        monkeypatch.undo()
    assert frames >= 12, f"only {frames} frames: the answer did not stream in steps"
    most = max(rendered.values(), default=0)
    assert most <= 6, (
        f"in {frames} frames of a stream the unchanged panels were rendered {dict(rendered)}"
    )

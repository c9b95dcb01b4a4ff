"""The status panel: model, provider, tokens, cost, context bar, turn state and queue (U1, L3)."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import cast

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.css.styles import RulesMap
from textual.widgets import Static

from agent.kinds import TodoStatus
from hermes_tui.content_match import same_content
from hermes_tui.safe_text import safe_line, safe_name
from hermes_tui.widgets.queue_view import QueueView
from hermes_tui.widgets.sessions_panel import short_model

BAR_WIDTH = 12
TEXT_WIDTH = 23
"""The panel's text width: its 26 columns less the padding and the border."""
STATE_WIDTH = TEXT_WIDTH - 2
"""The turn state's text width: the panel's text width less the `● ` in front."""


def human_count(n: int) -> str:
    """1234 -> 1.2k, 2_500_000 -> 2.5M."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 1000:
        return f"{n / 1000:.1f}k"
    return str(n)


def context_bar(
    used: int, window: int | None, width: int = BAR_WIDTH, *, estimated: bool = False
) -> str:
    """A fixed-width bar of how full the context window is; `~` marks an estimate.

    An unknown window is said to be unknown, never assumed: the count stands alone.
    """
    mark = "~" if estimated else ""
    if not window:
        return f"{mark}{human_count(used)} · window unknown" if used else "window unknown"
    fraction = min(1.0, used / window)
    filled = round(fraction * width)
    return "█" * filled + "░" * (width - filled) + f" {mark}{fraction:.0%}"


def _keep_units(text: str) -> str:
    """`12 s` is one word, so wrapping never splits a number from its unit."""
    return re.sub(r"(\d) (s|min|h)\b", "\\1\u00a0\\2", text)


def _model_line(model: str) -> str:
    """The model on one line: as it is when it fits, else `provider:` and the name's last
    path part (a `.gguf` file, an OpenRouter model), cut with `…`."""
    whole = safe_name(model)
    if len(whole) <= TEXT_WIDTH:
        return whole
    provider, colon, name = model.partition(":")
    if not colon:
        provider, name = "", model
    name = short_model(name, max(TEXT_WIDTH - len(provider) - 1, 8))
    line = f"{safe_name(provider)}:{name}" if colon else name
    return line if len(line) <= TEXT_WIDTH else line[: TEXT_WIDTH - 1] + "…"


def hint_lines(text: str, width: int = TEXT_WIDTH) -> list[str]:
    """`text` wrapped at spaces; a word longer than a line (a path) breaks after a `/`, and a
    piece still too long keeps its tail: never a break in the middle of a word."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        pieces = re.findall(r"[^/]*/|[^/]+$", word) if len(word) > width else [word]
        for index, piece in enumerate(pieces):
            if len(piece) > width:
                piece = "…" + piece[-(width - 1) :]
            glue = "" if index or not line else " "
            if line and len(line) + len(glue) + len(piece) > width:
                lines.append(line)
                line, glue = "", ""
            line += glue + piece
    return [*lines, line] if line or not lines else lines


COMPACTION_LINES = 5
"""The compaction outcome is cut to this many lines (a failure's full text is in the transcript)."""


def _compaction_lines(s: StatusState) -> list[Content]:
    """`◈ compacting... (N tokens of summary)` while it runs, then the outcome, dim."""
    if not s.compaction:
        return []
    lines = textwrap.wrap(safe_line(s.compaction), STATE_WIDTH)
    if len(lines) > COMPACTION_LINES:
        lines = lines[:COMPACTION_LINES]
        lines[-1] = lines[-1][: STATE_WIDTH - 1] + "…"
    style = "$warning" if s.compacting else "dim"
    first = Content.assemble(("◈ ", "$accent"), (lines[0], style))
    return [first, *(Content.styled("  " + line, style) for line in lines[1:])]


def mode_style(mode: str) -> str:
    """The colour of the approval mode: yolo warns, plan stands out, the rest are plain."""
    return {"yolo": "bold $error", "plan": "bold $accent", "auto-edit": "$warning"}.get(mode, "")


def state_style(state: str) -> str:
    """The colour of the turn state's dot."""
    return {"idle": "$success", "error": "$error", "stopped": "$error"}.get(state, "$warning")


INSTRUCTION_LINES = 4
"""Instruction files listed by name; more are counted."""


def _instruction_lines(s: StatusState) -> list[Content]:
    """`instructions` and the files in effect, each on a line cut from the left."""
    if not s.instructions:
        return []
    lines = [Content.styled("instructions", "dim")]
    for shown in s.instructions[:INSTRUCTION_LINES]:
        name = safe_name(shown)
        if len(name) > STATE_WIDTH:
            name = "…" + name[-(STATE_WIDTH - 1) :]
        lines.append(Content.assemble(("◈ ", "$accent"), name))
    if len(s.instructions) > INSTRUCTION_LINES:
        lines.append(Content.styled(f"  and {len(s.instructions) - INSTRUCTION_LINES} more", "dim"))
    return lines


TODO_LINES = 8
"""Todo items shown; a longer list shows what is left first, and counts the rest."""
TODO_ITEM_LINES = 2
"""An item wraps to at most this many lines (its full text is in the transcript)."""
# Keyed by plain strings: the panel is handed each status as text (an unknown one shows "?").
TODO_MARKS: dict[str, str] = {
    TodoStatus.PENDING: "☐",
    TodoStatus.IN_PROGRESS: "▶",
    TodoStatus.DONE: "☑",
}
_TODO_STYLES: dict[str, tuple[str, str]] = {
    TodoStatus.DONE: ("$success", "dim"),
    TodoStatus.IN_PROGRESS: ("bold $warning", "bold"),
}

TodoItems = tuple[tuple[str, str], ...]
"""The model's todo list as the panel shows it: (text, status) an item, in order."""


def _subagent_lines(s: StatusState) -> list[Content]:
    """`subagents 1.2k · $0.0012`: their part of the totals above (G1), once one ran."""
    if not s.subagent_tokens:
        return []
    cost = f" · ${s.subagent_cost_usd:.4f}" if s.subagent_cost_usd is not None else ""
    return [Content.assemble(("subagents ", "dim"), human_count(s.subagent_tokens) + cost)]


def todo_progress(todos: TodoItems) -> str:
    """`2/5`: items done of all."""
    done = sum(status == TodoStatus.DONE for _text, status in todos)
    return f"{done}/{len(todos)}"


def _todo_lines(todos: TodoItems) -> list[Content]:
    """`Todo 2/5`, then the items with their marks: all of a short list; of a long one,
    those not done yet (in order), and how many more there are (N2)."""
    if not todos:
        return []
    items = list(todos)
    if len(items) > TODO_LINES:
        items = [item for item in items if item[1] != TodoStatus.DONE][:TODO_LINES]
    lines = [Content.assemble(("Todo ", "bold $accent"), (todo_progress(todos), "dim"))]
    for text, status in items:
        mark_style, text_style = _TODO_STYLES.get(status, ("", ""))
        # The model's words come from outside: every hidden character is shown (H1).
        wrapped = textwrap.wrap(safe_line(text), STATE_WIDTH) or [""]
        if len(wrapped) > TODO_ITEM_LINES:
            wrapped = wrapped[:TODO_ITEM_LINES]
            wrapped[-1] = wrapped[-1][: STATE_WIDTH - 1] + "…"
        mark = TODO_MARKS.get(status, "?")
        lines.append(Content.assemble((f"{mark} ", mark_style), (wrapped[0], text_style)))
        lines += [Content.styled("  " + line, text_style) for line in wrapped[1:]]
    hidden = len(todos) - len(items)
    if hidden:
        lines.append(Content.styled(f"  and {hidden} more", "dim"))
    return [*lines, Content("")]


BACKGROUND_LINES = 3
"""Background processes listed by their rows; more are counted (/ps lists them all)."""


def _background_lines(rows: tuple[str, ...]) -> list[Content]:
    """`2 background (/ps)` and a row each, cut to the panel's width (G2)."""
    if not rows:
        return []
    lines = [Content.assemble((f"{len(rows)} background", "bold"), (" (/ps)", "dim"))]
    for row in rows[:BACKGROUND_LINES]:
        shown = row if len(row) <= TEXT_WIDTH - 2 else row[: TEXT_WIDTH - 3] + "…"
        lines.append(Content.assemble(("⚙ ", "$accent"), shown))
    if len(rows) > BACKGROUND_LINES:
        lines.append(Content.styled(f"  and {len(rows) - BACKGROUND_LINES} more", "dim"))
    return lines


@dataclass
class StatusState:
    """Everything the status panel shows."""

    model: str = ""
    provider: str = ""
    mode: str = ""
    """The approval mode (ask, auto-edit, plan, yolo: N1); "" until the agent is up."""
    sandbox: str = ""
    """How shell commands are confined ("bwrap", "unconfined"); empty with `sandbox: off`."""
    sandbox_hides: str = ""
    """What the sandbox hides ("home + 30 credential places hidden"); /help lists them."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    cost_cap: float | None = None
    """The session's spend cap, shown after the cost ("$0.42 / $5.00"; $2)."""
    context_used: int = 0
    context_window: int | None = None
    estimated: bool = False
    """The session's totals include calls the server sent no usage for (shown with `~`)."""
    cost_estimated: bool = False
    """The cost includes list prices from the built-in table (shown with `~`, $2)."""
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    """Prompt tokens read from and written to the provider's cache ($1)."""
    context_estimated: bool = False
    """`context_used` is an estimate (a stopped call, or a compaction's projection)."""
    state: str = "idle"
    detail: str = ""
    activity: str = ""
    streamed_tokens: int | None = None
    hint: str = ""
    hint_level: str = "warning"
    """warning (the demo's setup hint) | error (a missing key)"""
    compaction: str = ""
    """While compaction runs, its progress; after, its outcome (until the next turn starts)."""
    compacting: bool = False
    mcp: str = ""
    """The MCP servers' states in a few words ("" when there are none)."""
    instructions: tuple[str, ...] = ()
    """The instruction files in effect (P1), as their paths are shown."""
    todos: TodoItems = ()
    """The model's todo list (N2); empty when it keeps none."""
    background: tuple[str, ...] = ()
    """The running background processes (G2), a row each (`:8000 python3 -m http.server`)."""
    subagent_tokens: int = 0
    """Of the tokens, the subagents' (G1) in this run; 0: none ran."""
    subagent_cost_usd: float | None = None


class StatusPanel(Vertical):
    """Renders `StatusState` above the input queue; the app changes `status` and refreshes."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.status = StatusState()

    def compose(self) -> ComposeResult:
        yield Static(id="status-body")
        yield QueueView(id="queue")

    @property
    def queue_view(self) -> QueueView:
        """The queue section."""
        return self.query_one(QueueView)

    @property
    def text(self) -> str:
        """The status text as one line of words, wrapping undone (for tests and checks)."""
        shown = str(self.query_one("#status-body", Static).content).replace("\u00a0", " ")
        return " ".join(shown.split())

    def refresh_status(self) -> None:
        """Re-render; while a turn runs, `activity` is the honest turn state (L3)."""
        s = self.status
        approx = "~" if s.estimated else ""  # some call's counts are estimates (S7)
        cost_approx = "~" if s.estimated or s.cost_estimated else ""
        cost = f"{cost_approx}${s.cost_usd:.4f}" if s.cost_usd is not None else "–"
        if s.cost_cap is not None:
            cost += f" / ${s.cost_cap:.2f}"
        lines = [
            Content.assemble(("Model", "bold $accent")),
            # A resumed session's model and a tool's name (in the turn state) come from
            # outside: every hidden character is shown. A long one (a llama.cpp `.gguf` path)
            # by its file name, cut to one line.
            Content(_model_line(s.model)),
            Content.assemble(("provider ", "dim"), safe_name(s.provider)),
            *([Content.assemble(("mode ", "dim"), (s.mode, mode_style(s.mode)))] if s.mode else []),
            *([Content.assemble(("sandbox ", "dim"), s.sandbox)] if s.sandbox else []),
            *[Content.styled(line, "dim") for line in textwrap.wrap(s.sandbox_hides, TEXT_WIDTH)],
            Content(""),
            Content.assemble(("tokens", "bold $accent")),
            Content.assemble(
                ("in ", "dim"),
                approx + human_count(s.input_tokens),
                ("  out ", "dim"),
                approx + human_count(s.output_tokens),
            ),
            *_cache_lines(s),
            Content.assemble(("cost ", "dim"), cost),
            *_subagent_lines(s),
            Content.assemble(("context", "dim")),
            Content(context_bar(s.context_used, s.context_window, estimated=s.context_estimated)),
            *_compaction_lines(s),
            *_instruction_lines(s),
            *([Content.styled(s.mcp, "$warning" if "failed" in s.mcp else "dim")] if s.mcp else []),
            *_background_lines(s.background),
            Content(""),
            *_todo_lines(s.todos),
            Content.assemble(("Turn", "bold $accent")),
        ]
        state = safe_name(s.activity or s.state)  # names a tool: its newlines shown
        state_lines = textwrap.wrap(_keep_units(state), STATE_WIDTH) or [""]
        lines.append(Content.assemble(("● ", state_style(s.state)), state_lines[0]))
        lines += [Content("  " + line) for line in state_lines[1:]]
        if s.detail:
            lines.append(Content(safe_line(s.detail)))
        if s.streamed_tokens is not None:
            streamed = f"~{human_count(s.streamed_tokens)} tokens streamed"
            lines.append(Content.styled(streamed, "dim"))
        if s.hint:
            style = "$error" if s.hint_level == "error" else "$warning"
            lines.append(Content(""))
            lines += [Content.styled(line, style) for line in hint_lines(safe_line(s.hint))]
        show_content(self.query_one("#status-body", Static), Content("\n").join(lines))


def _cache_lines(s: StatusState) -> list[Content]:
    """The prompt cache's reads and writes ($1), once the provider reported any."""
    if not (s.cache_read_tokens or s.cache_write_tokens):
        return []
    return [
        Content.assemble(
            ("cache read ", "dim"),
            human_count(s.cache_read_tokens),
            ("  write ", "dim"),
            human_count(s.cache_write_tokens),
        )
    ]


def show_content(widget: Static, content: Content) -> None:
    """Update `widget`, laying the screen out again only when its height changes.

    Any layout request reflows the whole screen, the streaming answer's blocks included, and
    the panel refreshes on every batch of streamed text (its token count moves).
    """
    if same_content(widget.content, content):
        return
    width, height = widget.content_region.size
    # Textual passes a widget's styles here itself (Widget._get_content_height); its
    # signature names the TypedDict of rules those styles stand for.
    rules = cast(RulesMap, widget.styles)
    keeps_height = width > 0 and content.get_height(rules, width) == height
    widget.update(content, layout=not keeps_height)

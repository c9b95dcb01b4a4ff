"""Tab completion, the command list and the `@` picker for the composer (U2, P2).

Typing `/` opens the command list: every command the typed name starts, with its origin
(built-in, project, user, MCP prompt) and a one-line help; Up / Down move in it, Tab puts the
highlighted one in the composer, Enter runs it (or puts it in, when it needs an argument),
Escape closes it (typing on opens it again). Tab completes a command's argument (each command
names its choices: themes, models, session titles...) or an `@path`; with nothing to
complete it does nothing (focus stays in the composer). Several choices: the first Tab adds
what they share, the next ones go through them. Typing `@` opens the picker: the index is
listed and the query ranked on threads of their own (completion/index.py, search.py), the
results come back as a callback on the app's queue, so a key never waits for them.

A path whose name does not show as itself (a newline, a control or invisible character) or
that holds a `"` is listed, shown visibly (H1), and not inserted: no mention can name it
faithfully, so picking it says why in the picker's status line instead.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from textual import events
from textual.widgets.text_area import Document

from agent import events as ev
from hermes_tui.commands.context import CommandContext
from hermes_tui.completion.index import FileIndex
from hermes_tui.completion.models import ModelCatalog, server_lister
from hermes_tui.completion.search import PathSearch
from hermes_tui.completion.tokens import Token, token_at
from hermes_tui.doors import RunsWorkers
from hermes_tui.safe_text import safe_name
from hermes_tui.widgets.completion import Choice, CommandRow, CompletionPopup

if TYPE_CHECKING:
    from pathlib import Path

    from textual.message import Message
    from textual.widget import Widget

    from hermes_tui.widgets.composer import Composer

W = TypeVar("W", bound="Widget")


def common_prefix(words: Sequence[str]) -> str:
    """The longest start every word shares (character by character: these are not paths)."""
    if not words:
        return ""
    first, last = min(words), max(words)
    size = 0
    while size < min(len(first), len(last)) and first[size] == last[size]:
        size += 1
    return first[:size]


ORIGINS = {"": "built-in", "mcp": "MCP prompt"}
"""How the command list names where a command comes from (a custom command's origin, such
as `project` or `user`, names itself)."""


def origin_label(origin: str) -> str:
    """Where a command comes from, as the command list shows it."""
    return ORIGINS.get(origin, origin)


def needs_argument(command: Any) -> bool:
    """True when the command cannot run without an argument (its usage names a `<required>`
    one): Enter in the list then puts it in the composer instead of running it."""
    return str(command.args).startswith("<")


def unmentionable(path: str) -> str | None:
    """Why `path` cannot be written as an `@` mention the user can read, or None."""
    shown = safe_name(path)
    if shown != path:
        return (
            f"{shown} is not attached: its name holds a newline, control or invisible "
            "character (shown as a symbol), which a mention would hide; rename it to attach it."
        )
    if '"' in path:
        return f"{shown} is not attached: a mention cannot name a path with a quote in it."
    return None


def filtered(candidates: Sequence[str], typed: str) -> list[str]:
    """Candidates starting with `typed` (case ignored), then those holding it."""
    q = typed.lower()
    starts = [c for c in candidates if c.lower().startswith(q)]
    holds = [c for c in candidates if q in c.lower() and c not in starts]
    return list(dict.fromkeys([*starts, *holds]))


class CompletionHost(CommandContext, RunsWorkers, Protocol):
    """What the completion uses of the app: a command's parts (argument completers get the
    app as their context), its folder, the composer and the popup, and its message queue."""

    workspace: Path

    @property
    def composer(self) -> Composer:
        """The composer widget."""
        ...

    def query_one(self, selector: type[W]) -> W:
        """The one widget of type `selector`."""
        ...

    def post_message(self, message: Message) -> bool:
        """Queue `message` on the app."""
        ...


class CompletionController:
    """Follows the composer's text and cursor; Tab, and the picker's keys, land here."""

    def __init__(self, app: CompletionHost) -> None:
        self.app = app
        self.index = FileIndex(app.workspace, on_built=self._built)
        self.search = PathSearch(self.index, self._ranked)
        self.models = ModelCatalog(app.config, server_lister())
        self.token: Token | None = None
        self.paths: list[str] = []
        self.paths_for: str | None = None  # the query `paths` were ranked for
        self.highlight = 0
        self._dismissed: int | None = None  # the mention (by start) Escape closed
        self.refusal: str | None = None
        """Why the last path picked was not inserted; shown until the highlight moves."""
        self._cycle: tuple[str, list[str], int] | None = None  # (text after Tab, choices, next)
        self.commands: list[Any] = []
        """The commands the list shows for the typed name, in /help's order."""
        self.command_highlight = 0
        self._commands_closed: str | None = None  # the name Escape closed the list at

    @property
    def popup(self) -> CompletionPopup:
        """The popup above the composer."""
        return self.app.query_one(CompletionPopup)

    @property
    def picking(self) -> bool:
        """True while the `@` picker is open."""
        token = self.token
        return token is not None and token.kind == "mention" and self._dismissed != token.start

    @property
    def listing(self) -> bool:
        """True while the command list is open."""
        token = self.token
        return (
            token is not None
            and token.kind == "name"
            and bool(self.commands)
            and self._commands_closed != token.query
        )

    def routes(self) -> Iterable[tuple[type, Callable[[Any], None]]]:
        """A finished turn may have changed files: the picker lists them again."""
        yield ev.TurnFinished, lambda _event: self.refresh_index()

    def start(self) -> None:
        """List the workspace and read the command files in the background (the first `@`
        and `/` find them ready, and a broken command file is told at start)."""
        self.index.refresh()
        threading.Thread(target=self.app.command_table.entries, daemon=True).start()

    def close(self) -> None:
        """Stop the picker's thread (the app is going)."""
        self.search.close()

    # -- following the composer --------------------------------------------------------------
    def follow(self, text: str, cursor: int) -> None:
        """The composer's text or cursor moved: show what Tab would complete there."""
        token = token_at(text, cursor)
        if self._cycle is not None and self._cycle[0] != text:
            self._cycle = None
        if token is None or token.kind != "mention" or token.start != self._dismissed:
            self._dismissed = None
        previous, self.token = self.token, token
        if token == previous and token is not None and token.kind == "mention":
            return  # the same mention (a repeated look before a key): nothing new to ask
        if token is None:
            self.popup.hide()
        elif token.kind == "name":
            if previous is None or previous.kind != "name" or previous.query != token.query:
                self.command_highlight = 0
                self._commands_closed = None
            self.commands = self._names(token.query)
            self.command_highlight = min(self.command_highlight, max(len(self.commands) - 1, 0))
            self._draw_commands()
        elif token.kind == "mention":
            if previous is None or previous.kind != "mention" or previous.query != token.query:
                self.highlight = 0
                self.refusal = None
            self._ask(token.query)
            self._draw_picker()
        elif self._cycle is None:
            self.popup.show_hints(self._hints(token))

    def _hints(self, token: Token) -> list[Choice]:
        return [Choice(choice) for choice in self._arguments(token)]

    def _draw_commands(self) -> None:
        token = self.token
        if token is None or not self.listing:
            self.popup.hide()
            return
        rows = [
            CommandRow(command.usage, origin_label(command.origin), command.help)
            for command in self.commands
        ]
        self.popup.show_commands("/" + token.query, rows, self.command_highlight)

    def _names(self, typed: str) -> list[Any]:
        return self.app.command_table.complete(f"/{typed}")

    def _arguments(self, token: Token) -> list[str]:
        entry = self.app.command_table.lookup(token.command)
        if entry is None or entry.arguments is None or self.app.agent is None:
            return []
        return filtered(entry.arguments(self.app, token.query), token.query)

    # -- the picker --------------------------------------------------------------------------
    def _ask(self, query: str) -> None:
        if self.index.ready:
            self.search.request(query)
        else:
            self.index.refresh()

    def _built(self, index: FileIndex) -> None:
        """The index was rebuilt (search thread or index thread): rank the query again."""
        self.app.post_message(events.Callback(callback=self._rerank))

    def _rerank(self) -> None:
        if self.picking and self.token is not None:
            self.search.request(self.token.query)

    def _ranked(self, query: str, paths: list[str], version: int) -> None:
        """On the search thread: hand the results to the app's queue."""
        self.app.post_message(events.Callback(callback=partial(self._show, query, paths)))

    def _show(self, query: str, paths: list[str]) -> None:
        if not self.picking or self.token is None or self.token.query != query:
            return  # typed on since: a newer ranking is on its way
        self.paths, self.paths_for = paths, query
        self.highlight = min(self.highlight, max(len(paths) - 1, 0))
        self._draw_picker()

    def _draw_picker(self) -> None:
        token = self.token
        if token is None or not self.picking:
            self.popup.hide()
            return
        current = self.paths_for == token.query
        if not self.index.ready:
            status = "listing the workspace…"
        elif not current:
            status = "…"
        elif not self.paths:
            status = "no match"
        elif self.refusal is not None:
            status = self.refusal
        else:
            status = f"{len(self.index.paths):,} paths · tab or enter picks · esc closes"
        choices = [Choice(path) for path in self.paths] if self.paths else []
        self.popup.show_picker(token.query, choices, self.highlight, status)

    def model_choices(self, typed: str = "") -> list[str]:
        """`/model`'s choices: the config's models and, once fetched, the servers' lists.

        Once `typed` names a provider (`name:`), only that provider's models: an unknown
        one (`bad:`) offers nothing, not another provider's model that happens to hold it.
        """
        self._models().fetch(
            done=lambda: self.app.post_message(events.Callback(callback=self._rehint))
        )
        agent = self.app.agent
        refs = self.models.refs(agent.model_ref if agent is not None else None)
        provider, colon, _model = typed.partition(":")
        if not colon:
            return refs
        stem = f"{provider.lower()}:"
        return [ref for ref in refs if ref.lower().startswith(stem)]

    def _models(self) -> ModelCatalog:
        """The catalog on the running agent's config (the demo server's port is known only
        once it started)."""
        agent = self.app.agent
        if agent is not None:
            self.models.config = agent.config
        return self.models

    def list_models(self, show: Callable[[list[Any]], Awaitable[None]]) -> None:
        """Ask every provider for its models on a worker thread; `show` gets the listings on
        the app's loop (a slow or dead server never holds a key)."""
        self._models()
        self.app.run_worker(
            self._list_models(show), group="model-list", exclusive=True, exit_on_error=False
        )

    async def _list_models(self, show: Callable[[list[Any]], Awaitable[None]]) -> None:
        listings = await asyncio.to_thread(self.models.list_all)
        await show(listings)
        self._rehint()

    def _rehint(self) -> None:
        """New choices arrived (a server's model list): show them if still completing."""
        if self.token is not None and self.token.kind == "argument" and self._cycle is None:
            self.popup.show_hints(self._hints(self.token))

    def refresh_index(self) -> None:
        """Files may have changed (a turn ended): list them again in the background, however
        recent the last listing (a turn that ends within the staleness window of the picker's
        last build wrote files that build never saw)."""
        if self.index.ready:
            self.index.refresh(force=True)

    # -- keys --------------------------------------------------------------------------------
    def key(self, key: str) -> bool:
        """Up, Down and Escape while the command list or the picker is open; True when they
        were used here."""
        if self.listing and self.token is not None:
            if key in ("up", "down"):
                step = -1 if key == "up" else 1
                self.command_highlight = (self.command_highlight + step) % len(self.commands)
                self._draw_commands()
                return True
            if key == "escape":
                self._commands_closed = self.token.query
                self.popup.hide()
                return True
            return False
        if not self.picking:
            return False
        if key in ("up", "down") and self.paths:
            step = -1 if key == "up" else 1
            self.highlight = (self.highlight + step) % len(self.paths)
            self.refusal = None
            self._draw_picker()
            return True
        if key == "escape" and self.token is not None:
            self._dismissed = self.token.start
            self.popup.hide()
            return True
        return False

    def enter(self) -> bool:
        """Enter while the picker shows paths picks the highlighted one, and in the command
        list it takes the highlighted command (True: the composer keeps the text, unsent)."""
        token = self.token
        if self.listing and token is not None:
            command = self.commands[self.command_highlight]
            if token.query.lower() == command.name:
                return False  # typed in full: sent as typed
            if needs_argument(command):
                self._replace(token, f"/{command.name} ")
                return True
            self._replace(token, f"/{command.name}")
            return False  # the composer sends the command now in its text
        if not self.picking or not self.paths:
            return False
        self._pick_path(self.paths[self.highlight])
        return True

    def tab(self) -> bool:
        """Complete what the cursor is in; False when there is nothing to complete."""
        token = self.token
        if token is None:
            return False
        if token.kind == "mention":
            if self.picking and self.paths and self.paths_for == token.query:
                self._pick_path(self.paths[self.highlight])
            return True  # the list is on its way: the key is Tab's, and does nothing yet
        if self.listing:
            self._replace(token, f"/{self.commands[self.command_highlight].name} ")
            return True
        if self._cycle is not None:
            _text, choices, position = self._cycle
            self._insert_choice(token, choices, position)
            return True
        if token.kind == "name":
            choices = [f"/{entry.name}" for entry in self._names(token.query)]
        else:
            choices = self._arguments(token)
        if not choices:
            return False
        if len(choices) == 1:
            self._replace(token, choices[0] + ("" if choices[0].endswith(":") else " "))
            return True
        shared = common_prefix(choices)
        typed = ("/" if token.kind == "name" else "") + token.query
        if len(shared) > len(typed):
            self._replace(token, shared)
            return True
        self._insert_choice(token, choices, 0)
        return True

    def _insert_choice(self, token: Token, choices: list[str], position: int) -> None:
        """Tab again through several choices: the next one goes in, marked in the hints."""
        choice = choices[position % len(choices)]
        self._replace(token, choice)
        self._cycle = (self.app.composer.text, choices, position + 1)
        shown = [Choice(c) for c in choices]
        self.popup.show_hints(shown, highlight=position % len(choices))

    def _pick_path(self, path: str) -> None:
        from agent.attachments import mention_for

        token = self.token
        assert token is not None
        self.refusal = unmentionable(path)
        if self.refusal is not None:
            self._draw_picker()
            return
        # A folder stays open for the next level (`@src/` lists what is in src/).
        self._replace(token, mention_for(path) + ("" if path.endswith("/") else " "))

    def _replace(self, token: Token, text: str) -> None:
        composer = self.app.composer
        document = composer.document
        # A plain text area's document (Textual types it as the base, which has no offsets).
        assert isinstance(document, Document)
        begin = document.get_location_from_index(token.start)
        end = document.get_location_from_index(max(token.end, composer_cursor(composer)))
        composer.replace(text, begin, end, maintain_selection_offset=False)


def composer_cursor(composer: Any) -> int:
    """The composer's cursor as an offset into its text."""
    offset: int = composer.document.get_index_from_location(composer.cursor_location)
    return offset

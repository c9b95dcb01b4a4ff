"""One home for each small idea: a scan of agent/, storage/ and hermes_tui/ (issue 28, item 5).

- No helper is copied: two modules never define functions of the same body (names of the
  locals aside), as `_cut` once was in three.
- A tool call's outcome (ok, error, declined) is worked out only by `ToolOutcome`.
- Commands register by plain imports a reader (or vulture) can follow: no `import_module`.
- Nothing installs logging machinery (a record factory, a filter, a handler) as a side effect
  of being imported: the log setup installs it, so C6's session stamp has one home too.
- The front end never makes up an agent event: events come from the agent.

Each check is a function over a tree; the tests run it on the real tree and on a planted
violation, so a check that stops seeing anything fails too.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import parsed_sources

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("agent", "storage", "hermes_tui")
MIN_BODY_NODES = 15
"""Smaller bodies (`self.x = x`, one delegating call) repeat without being an idea."""
OUTCOME_HOME = "agent/kinds.py"
OUTCOME_WORDS = {"ok", "error", "declined"}
LOGGING_INSTALLERS = {
    "setLogRecordFactory",
    "addFilter",
    "addHandler",
    "basicConfig",
    "dictConfig",
    "fileConfig",
    "captureWarnings",
    "install_log_context",
    "install_log_redaction",
}


def modules(root: Path) -> Iterator[tuple[str, ast.Module]]:
    """Every module of the packages under `root`: its path (relative, posix) and its tree."""
    # Shared trees (parsed_sources): the checks only read them (`_Shape` renames as it reads).
    for path in parsed_sources.python_files(root, PACKAGES):
        yield path.relative_to(root).as_posix(), parsed_sources.tree(path)


class _Shape:
    """A function's body as a comparable value: its own names (arguments, locals) renamed in
    order of appearance, argument annotations dropped; the names it uses from outside (`str`,
    `safe_line`) stay, since they make a different body. `size` counts the nodes read.

    Read from the shared tree without changing it (no copy: a deep copy of every function
    made this scan cost seconds)."""

    def __init__(self, local: set[str]) -> None:
        self.local = local
        self.names: dict[str, str] = {}
        self.size = 0

    def _name(self, name: str) -> str:
        if name not in self.local:
            return name
        return self.names.setdefault(name, f"n{len(self.names)}")

    def of(self, value: object) -> object:
        """The shape of a node, a list of nodes or a field's plain value."""
        if isinstance(value, list):
            return tuple(self.of(item) for item in value)
        if not isinstance(value, ast.AST):
            return type(value).__name__, repr(value)  # 1, True and 1.0 differ
        self.size += 1
        if isinstance(value, ast.arg):
            return "arg", self._name(value.arg), value.type_comment
        if isinstance(value, ast.Name):
            self.size += 1  # its ctx
            return "Name", self._name(value.id), type(value.ctx).__name__
        return type(value).__name__, *(self.of(getattr(value, f, None)) for f in value._fields)


def _own_names(function: ast.AST) -> set[str]:
    names = {node.arg for node in ast.walk(function) if isinstance(node, ast.arg)}
    stored = (
        node.id
        for node in ast.walk(function)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    )
    return names | set(stored)


def _fingerprint(function: ast.FunctionDef | ast.AsyncFunctionDef) -> object | None:
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring may differ between copies
    shape = _Shape(_own_names(function))
    key = shape.of(function.args), shape.of(body)
    # The nodes of `def f(args): body` in a module: the module and the def, then these.
    if 2 + shape.size < MIN_BODY_NODES:
        return None
    return key


def copied_helpers(root: Path) -> list[str]:
    """Functions whose bodies are the same in more than one module."""
    found: dict[object, list[str]] = defaultdict(list)
    for path, tree in modules(root):
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                key = _fingerprint(node)
                if key is not None:
                    found[key].append(f"{path}:{node.lineno} {node.name}")
    return [
        " = ".join(places)
        for places in found.values()
        if len({place.split(":")[0] for place in places}) > 1
    ]


def _is_outcome_word(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value in OUTCOME_WORDS


def outcome_deciders(root: Path) -> list[str]:
    """Places outside ToolOutcome that choose between "ok", "error" and "declined"."""
    found = set()
    for path, tree in modules(root):
        if path == OUTCOME_HOME:
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.IfExp)
                and _is_outcome_word(node.body)
                and (_is_outcome_word(node.orelse) or isinstance(node.orelse, ast.IfExp))
            ):
                found.add(f"{path}:{node.lineno}")
    return sorted(found)


def dynamic_imports(root: Path) -> list[str]:
    """`import_module(...)` or `__import__(...)` calls in hermes_tui/commands/."""
    found = []
    for path, tree in modules(root):
        if not path.startswith("hermes_tui/commands/"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in ("import_module", "__import__"):
                    found.append(f"{path}:{node.lineno}")
    return found


def _top_level_calls(tree: ast.Module) -> Iterator[ast.Call]:
    """Calls that run when the module is imported (outside any def or class body)."""
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        if isinstance(node, ast.Call):
            yield node
        pending.extend(ast.iter_child_nodes(node))


def logging_installed_at_import(root: Path) -> list[str]:
    """Module-level calls that install a record factory, a filter or a handler."""
    found = []
    for path, tree in modules(root):
        for call in _top_level_calls(tree):
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in LOGGING_INSTALLERS:
                found.append(f"{path}:{call.lineno} {name}")
    return found


def _event_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The aliases of agent.events in a module, and the names imported from it."""
    aliases, names = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "agent":
            aliases |= {a.asname or a.name for a in node.names if a.name == "events"}
        elif isinstance(node, ast.ImportFrom) and node.module == "agent.events":
            names |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            aliases |= {a.asname for a in node.names if a.name == "agent.events" and a.asname}
    return aliases, names


def made_up_events(root: Path) -> list[str]:
    """Places in hermes_tui/ that construct an event of agent.events."""
    found = []
    for path, tree in modules(root):
        if not path.startswith("hermes_tui/"):
            continue
        aliases, names = _event_names(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            by_alias = (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id in aliases
                and func.attr[:1].isupper()
            )
            by_name = isinstance(func, ast.Name) and func.id in names and func.id[:1].isupper()
            if by_alias or by_name:
                found.append(f"{path}:{node.lineno}")
    return found


CHECKS = (
    copied_helpers,
    outcome_deciders,
    dynamic_imports,
    logging_installed_at_import,
    made_up_events,
)


# -- the tree as it is ----------------------------------------------------------------------
def test_no_helper_is_copied_between_modules():
    assert copied_helpers(ROOT) == []


def test_only_tool_outcome_decides_a_tool_calls_outcome():
    assert outcome_deciders(ROOT) == []


def test_commands_register_through_plain_imports():
    assert dynamic_imports(ROOT) == []


def test_nothing_installs_logging_when_imported():
    assert logging_installed_at_import(ROOT) == []


def test_the_front_end_never_makes_up_an_agent_event():
    assert made_up_events(ROOT) == []


# -- each check sees a planted violation ------------------------------------------------------
PLANTED = {
    "agent/attachments_copy.py": '''
def _cut(text, cap):
    """`text` within `cap` characters."""
    if len(text) <= cap:
        return text
    head = text[:cap]
    line_end = head.rfind("\\n")
    return head[: line_end + 1] if line_end > cap // 2 else head
''',
    "agent/instructions_copy.py": """
def _shorten(body: str, limit: int) -> str:
    if len(body) <= limit:
        return body
    start = body[:limit]
    end = start.rfind("\\n")
    return start[: end + 1] if end > limit // 2 else start
""",
    "hermes_tui/widgets/live_copy.py": """
from agent import events as ev

def state(event):
    return "declined" if event.declined else ("ok" if event.ok else "error")

def begin(presenter, now):
    presenter.apply(ev.TurnStarted("", ""), now)
""",
    "hermes_tui/commands/__init__.py": """
from importlib import import_module

for name in ("turn", "session"):
    import_module(f"hermes_tui.commands.{name}")
""",
    "agent/compaction_copy.py": """
import logging

def factory(*args, **kwargs):
    return logging.LogRecord(*args, **kwargs)

if True:
    logging.setLogRecordFactory(factory)
""",
}


def test_each_check_catches_its_planted_violation(tmp_path):
    for relative, text in PLANTED.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert len(copied_helpers(tmp_path)) == 1  # renamed locals are still a copy
    assert outcome_deciders(tmp_path) == ["hermes_tui/widgets/live_copy.py:5"]
    assert dynamic_imports(tmp_path) == ["hermes_tui/commands/__init__.py:5"]
    assert logging_installed_at_import(tmp_path) == [
        "agent/compaction_copy.py:8 setLogRecordFactory"
    ]
    assert made_up_events(tmp_path) == ["hermes_tui/widgets/live_copy.py:8"]

"""ToolRegistry: schemas, summaries, approval modes, and run() never raising."""

from __future__ import annotations

import pytest

from agent.tools import ApprovalRequest, ToolContext, ToolResult
from agent.tools.registry import DECLINED, NO_APPROVER, cap_text

ALL = [
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "glob",
    "grep",
    "run_shell",
    "propose_plan",
    "todo_write",
    "web_fetch",
    "shell_output",
    "shell_stop",
]


def test_names_and_schemas(reg):
    assert reg.names() == ALL
    schemas = reg.schemas()
    assert [s["name"] for s in schemas] == ALL
    # N1: propose_plan is offered only in plan mode.
    assert [s["name"] for s in reg.schemas("ask")] == [n for n in ALL if n != "propose_plan"]
    assert [s["name"] for s in reg.schemas("plan")] == ALL
    for s in schemas:
        assert set(s) == {"name", "description", "parameters"}
        assert s["description"]
        params = s["parameters"]
        assert params["type"] == "object"
        assert set(params["required"]) <= set(params["properties"])
        for prop in params["properties"].values():
            assert prop["type"] in {"string", "integer", "number", "boolean", "array"}
            assert prop["description"]


def test_schemas_are_copies(reg):
    reg.schemas()[0]["parameters"]["properties"].clear()
    assert reg.schemas()[0]["parameters"]["properties"]


def test_summary(reg):
    assert reg.summary("read_file", {"path": "src/app.py"}) == "read_file src/app.py"
    assert reg.summary("run_shell", {"command": "pytest -q"}) == "run_shell pytest -q"
    assert reg.summary("list_dir", {}) == "list_dir"
    assert reg.summary("grep", {"pattern": "TODO", "path": "src"}) == "grep TODO src"
    long = reg.summary("run_shell", {"command": "echo one\necho two " + "x" * 200})
    # Kept as written, only cut: the UI shows the newline as ␊ on one row (H1), so a path
    # `a\nb.txt` never reads as `a b.txt`.
    assert long.startswith("run_shell echo one\necho two x")
    assert reg.summary("read_file", {"path": "a\nb  c.txt"}) == "read_file a\nb  c.txt"
    assert len(long) <= 80
    assert long.endswith("…")
    assert reg.summary("nope", {"a": 1}).startswith("nope")
    assert reg.summary("read_file", "not a dict") == "read_file"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("ask", {"write_file", "edit_file", "run_shell", "web_fetch"}),
        ("auto-edit", {"run_shell", "web_fetch"}),  # G3: a fetch asks per domain here too
        ("yolo", set()),
        ("bogus", {"write_file", "edit_file", "run_shell", "web_fetch"}),  # unknown: safest
    ],
)
def test_needs_approval(reg, mode, expected):
    """A4: which tools need a yes in each approval mode (`ask`, `auto-edit`, `yolo`)."""
    assert {name for name in ALL if reg.needs_approval(name, mode)} == expected
    assert not reg.needs_approval("no_such_tool", mode)


class Recorder:
    """An approve callback that records requests and answers a fixed value."""

    def __init__(self, answer: bool):
        self.answer = answer
        self.requests: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> bool:
        self.requests.append(request)
        return self.answer


def test_ask_write_approved_sees_diff(reg, ws):
    (ws / "f.txt").write_text("one\ntwo\n")
    approve = Recorder(True)
    ctx = ToolContext(ws, approval_mode="ask", approve=approve)
    result = reg.run("write_file", {"path": "f.txt", "content": "one\nTWO\n"}, ctx)
    assert result.ok, result.output
    [req] = approve.requests
    assert req.tool == "write_file"
    assert "f.txt" in req.summary
    assert "-two" in req.detail and "+TWO" in req.detail
    assert (ws / "f.txt").read_text() == "one\nTWO\n"


def test_ask_edit_declined_not_written(reg, ws):
    (ws / "f.txt").write_text("alpha\nbeta\n")
    approve = Recorder(False)
    ctx = ToolContext(ws, approval_mode="ask", approve=approve)
    result = reg.run(
        "edit_file", {"path": "f.txt", "old_string": "beta", "new_string": "gamma"}, ctx
    )
    assert result == ToolResult(False, DECLINED, declined=True)
    [req] = approve.requests
    assert req.tool == "edit_file"
    assert "-beta" in req.detail and "+gamma" in req.detail
    assert (ws / "f.txt").read_text() == "alpha\nbeta\n"


def test_ask_write_declined_not_created(reg, ws):
    ctx = ToolContext(ws, approval_mode="ask", approve=Recorder(False))
    result = reg.run("write_file", {"path": "new/f.txt", "content": "x"}, ctx)
    assert not result.ok
    assert not (ws / "new").exists()


def test_ask_shell_request_has_command_and_cwd(reg, ws):
    approve = Recorder(False)
    ctx = ToolContext(ws, approval_mode="ask", approve=approve)
    result = reg.run("run_shell", {"command": "touch made"}, ctx)
    assert result.output == DECLINED
    [req] = approve.requests
    assert req.tool == "run_shell"
    assert req.summary == "run_shell touch made"
    assert "touch made" in req.detail and str(ws) in req.detail
    assert not (ws / "made").exists()


def test_no_approver_refuses(reg, ws):
    ctx = ToolContext(ws, approval_mode="ask", approve=None)
    for name, args in [
        ("write_file", {"path": "f.txt", "content": "x"}),
        ("run_shell", {"command": "touch made"}),
    ]:
        assert reg.run(name, args, ctx) == ToolResult(False, NO_APPROVER)
    assert not (ws / "f.txt").exists()
    assert not (ws / "made").exists()


def test_reads_never_ask(reg, ws):
    (ws / "f.txt").write_text("x\n")
    approve = Recorder(False)
    ctx = ToolContext(ws, approval_mode="ask", approve=approve)
    for name, args in [
        ("read_file", {"path": "f.txt"}),
        ("list_dir", {}),
        ("glob", {"pattern": "*"}),
        ("grep", {"pattern": "x"}),
    ]:
        assert reg.run(name, args, ctx).ok
    assert approve.requests == []


def test_auto_edit_writes_without_asking_but_asks_for_shell(reg, ws):
    approve = Recorder(False)
    ctx = ToolContext(ws, approval_mode="auto-edit", approve=approve)
    assert reg.run("write_file", {"path": "f.txt", "content": "x"}, ctx).ok
    assert approve.requests == []
    assert reg.run("run_shell", {"command": "true"}, ctx).output == DECLINED
    assert [r.tool for r in approve.requests] == ["run_shell"]


def test_yolo_never_asks(reg, ws):
    approve = Recorder(False)
    ctx = ToolContext(ws, approval_mode="yolo", approve=approve)
    assert reg.run("write_file", {"path": "f.txt", "content": "a"}, ctx).ok
    assert reg.run("edit_file", {"path": "f.txt", "old_string": "a", "new_string": "b"}, ctx).ok
    assert reg.run("run_shell", {"command": "true"}, ctx).ok
    assert approve.requests == []
    assert (ws / "f.txt").read_text() == "b"


def test_invalid_args_are_not_sent_for_approval(reg, ws):
    approve = Recorder(True)
    ctx = ToolContext(ws, approval_mode="ask", approve=approve)
    result = reg.run("write_file", {"path": "../escape.txt", "content": "x"}, ctx)
    assert not result.ok and "outside the workspace" in result.output
    result = reg.run(
        "edit_file", {"path": "missing.txt", "old_string": "a", "new_string": "b"}, ctx
    )
    assert not result.ok and "not found" in result.output
    result = reg.run("run_shell", {"command": "   "}, ctx)
    assert not result.ok
    assert approve.requests == []


def test_approve_callback_raising_is_a_result(reg, ws):
    def boom(request):
        raise RuntimeError("modal went away")

    ctx = ToolContext(ws, approval_mode="ask", approve=boom)
    result = reg.run("write_file", {"path": "f.txt", "content": "x"}, ctx)
    assert not result.ok and "modal went away" in result.output
    assert not (ws / "f.txt").exists()


@pytest.mark.parametrize(
    ("name", "args", "fragment"),
    [
        ("no_such_tool", {}, "Unknown tool 'no_such_tool'"),
        ("read_file", {}, "missing required argument 'path'"),
        ("read_file", {"path": None}, "missing required argument 'path'"),
        ("write_file", {}, "missing required arguments 'path', 'content'"),
        ("read_file", {"path": 42}, "'path' must be a string"),
        ("read_file", {"path": "f", "offset": "ten"}, "'offset' must be an integer"),
        ("read_file", {"path": "f", "offset": True}, "'offset' must be an integer"),
        ("edit_file", {"path": "f", "old_string": "a", "new_string": ["b"]}, "must be a string"),
        (
            "edit_file",
            {"path": "f", "old_string": "a", "new_string": "b", "replace_all": 3},
            "boolean",
        ),
        ("run_shell", {"command": "true", "timeout": "soon"}, "'timeout' must be a number"),
        ("run_shell", {"command": "true", "timeout": float("nan")}, "'timeout' must be a number"),
        ("glob", ["**/*"], "expected a JSON object, got list"),
        ("glob", "{not json", "not a JSON object"),
        ("read_file", {"path": "a\0b"}, "Invalid path"),
    ],
)
def test_run_never_raises_on_bad_input(reg, yolo, name, args, fragment):
    """A4: a tool error is a result for the model, never an exception."""
    result = reg.run(name, args, yolo)
    assert isinstance(result, ToolResult)
    assert not result.ok
    assert fragment in result.output
    assert "\n" not in result.output


def test_lenient_coercions(reg, ws, yolo):
    (ws / "f.txt").write_text("a\nb\nc\n")
    result = reg.run("read_file", {"path": "f.txt", "offset": "2", "limit": 1.0}, yolo)
    assert result.ok and result.output.startswith("     2\tb")
    result = reg.run("read_file", '{"path": "f.txt"}', yolo)  # JSON text arguments
    assert result.ok
    result = reg.run("read_file", {"path": "f.txt", "unknown": 1}, yolo)  # extras ignored
    assert result.ok


def test_handler_bug_becomes_result(reg, yolo, monkeypatch):
    tool = reg.get("list_dir")

    def broken(ctx, args):
        raise KeyError("oops")

    monkeypatch.setattr(tool, "handler", broken)
    result = reg.run("list_dir", {}, yolo)
    assert not result.ok and "KeyError" in result.output


def test_output_cap_applies_to_every_tool(reg, ws):
    (ws / "big.txt").write_text("y" * 5000)
    ctx = ToolContext(ws, approval_mode="yolo", output_cap=1000)
    result = reg.run("read_file", {"path": "big.txt"}, ctx)
    assert result.ok
    assert len(result.output) <= 1100


def test_cap_text_keeps_head_and_tail():
    text = "H" * 100 + "M" * 1000 + "T" * 100
    capped = cap_text(text, 200)
    assert capped.startswith("H" * 100) and capped.endswith("T" * 100)
    assert "[... 1000 characters omitted ...]" in capped
    assert cap_text("short", 200) == "short"


def test_context_resolves_workspace(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    ctx = ToolContext(tmp_path / "link")
    assert ctx.workspace == (tmp_path / "real").resolve()

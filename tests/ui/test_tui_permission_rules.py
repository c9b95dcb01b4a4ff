"""The approval dialog's project rule offer, and /permissions (SPEC N3)."""

from __future__ import annotations

from textual.widgets import Static
from ui.tui_helpers import approval_dialog, reply, type_keys
from waits import wait_until

from agent.tools.permissions import project_rules_path
from hermes_tui.widgets.messages import NoticeLine
from hermes_tui.widgets.tool_block import ToolBlock

SIZE = (120, 40)


def shell(command: str, call_id: str) -> dict:
    """A scripted reply that asks to run one shell command."""
    return reply(
        tool_calls=[{"id": call_id, "name": "run_shell", "arguments": {"command": command}}]
    )


def states(app) -> list[str]:
    return [block.state for block in app.transcript.query(ToolBlock)]


def notices(app) -> list[str]:
    return [notice.text for notice in app.transcript.query(NoticeLine)]


async def test_always_for_echo_in_this_project_writes_a_rule_that_a_compound_misses(
    make_app, scripted_in_process, workspace, hermes_home
):
    """N3: p writes `run_shell(echo *)` under the home; `echo b` runs unasked, a compound asks."""
    server = scripted_in_process(
        {
            "replies": [
                shell("echo a", "s1"),
                shell("echo b", "s2"),
                shell("echo c; touch pwned", "s3"),
                reply("done"),
            ]
        }
    )
    app = make_app(server, approval="ask")
    async with app.run_test(size=SIZE) as pilot:
        await app.submit("echo things")
        dialog = await approval_dialog(pilot, armed=True)
        assert dialog.request.rule == "run_shell(echo *)"
        scope = str(dialog.query_one("#approval-always", Static).content)
        assert "always for `echo *` in this project" in scope
        await type_keys(pilot, "p")
        compound = await approval_dialog(pilot, armed=True, after=dialog)
        assert "touch pwned" in compound.request.detail and compound.request.rule == ""
        assert states(app) == ["ok", "ok", "awaiting"]
        await type_keys(pilot, "n")
        await app.wait_for_turn()
        assert not (workspace / "pwned").exists()
        assert project_rules_path(hermes_home, workspace).is_file()
        assert not any(path.name.startswith("permissions") for path in workspace.rglob("*"))
        await app.run_command("/permissions")
        await wait_until(pilot, lambda: any("run_shell(echo *)" in n for n in notices(app)))
        listing = next(n for n in notices(app) if "run_shell(echo *)" in n)
        assert "allow  run_shell(echo *)  (project)" in listing


async def test_permissions_lists_config_rules_with_their_origin(
    make_app, scripted_in_process, workspace, hermes_home
):
    from agent.config import load_config
    from hermes_tui.app import HermesApp

    server = scripted_in_process({"replies": [reply("ok")]})
    built = make_app(server)
    config = hermes_home / "config.yaml"
    config.write_text(
        config.read_text() + "permissions:\n  deny: [run_shell(rm *)]\n  allow: [mcp__git__*]\n"
    )
    app = HermesApp(load_config(), workspace=workspace, probes=built.probes)
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await app.run_command("/permissions")
        await wait_until(pilot, lambda: any("rm *" in n for n in notices(app)))
        listing = next(n for n in notices(app) if "rm *" in n)
        assert "deny   run_shell(rm *)  (config)" in listing
        assert "allow  mcp__git__*  (config)" in listing


def test_the_dialog_offers_a_project_rule(snap_compare, make_app, scripted_in_process):
    """N3: the dialog's rule offer for a simple command, as the user sees it."""
    server = scripted_in_process({"replies": [shell("pytest -q tests", "s1"), reply("ok")]})
    app = make_app(server, approval="ask")

    async def asked(pilot):
        await app.submit("run the tests")
        await approval_dialog(pilot, armed=True)

    assert snap_compare(app, terminal_size=SIZE, run_before=asked)


async def test_g3_the_project_offer_for_a_web_fetch_names_the_domain_not_a_command(
    make_app, scripted_in_process, workspace
):
    """G3: "always for this project" on a web fetch speaks of the page's domain; the shell's
    wording ("a compound command never matches it") is not reused. A no fetches nothing."""
    url = "https://docs.python.org/3/library/"
    call = {"id": "w1", "name": "web_fetch", "arguments": {"url": url}}
    server = scripted_in_process({"replies": [reply(tool_calls=[call]), reply("fine")]})
    app = make_app(server, approval="ask")
    async with app.run_test(size=SIZE) as pilot:
        await app.submit("read the docs")
        dialog = await approval_dialog(pilot, armed=True)
        assert dialog.request.rule == "web_fetch(docs.python.org)"
        scope = " ".join(str(dialog.query_one("#approval-always", Static).content).split())
        assert "p: always for pages on `docs.python.org` in this project" in scope
        assert "the rule web_fetch(docs.python.org)" in scope
        assert "other domains still ask" in scope and "compound" not in scope
        await type_keys(pilot, "n")
        await app.wait_for_turn()
        assert states(app) == ["declined"]

"""The MCP test harness: the integration Harness plus MCP servers in config.yaml."""

from __future__ import annotations

import yaml
from helpers import write_config
from waits import wait_until

from agent.mcp.attach import attach_mcp
from storage.db import SessionDB


def call(name, arguments=None, call_id="call_1"):
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments or {}}]}


class McpHarness:
    """The integration harness plus MCP servers in config.yaml, attached to each agent."""

    def __init__(self, harness):
        self.h = harness
        self.managers = []

    def start(
        self, script, servers, *, mcp=None, agent=None, approve=None, wait=True, wire="openai"
    ):
        h = self.h
        h.server = h.serve(script)
        path = write_config(h.home, h.server, agent=agent, wire=wire)
        data = yaml.safe_load(path.read_text())
        data["mcp_servers"] = servers
        data["mcp"] = {"turn_wait_seconds": 10, **(mcp or {})}
        path.write_text(yaml.safe_dump(data))
        h.db = h.loop.run(SessionDB.open(h.home / "state.db"))
        return self.agent(approve=approve, wait=wait)

    def agent(self, *, approve=None, wait=True):
        agent = self.h.agent(approve=approve)
        manager = attach_mcp(agent, self.h.workspace)
        self.managers.append(manager)
        agent.mcp = manager
        if wait:
            wait_until(lambda: not manager.starting(), timeout=30, what="MCP servers started")
        return agent

    def tools_sent(self, index=-1):
        return [t["function"]["name"] for t in self.h.bodies()[index].get("tools", [])]

    def tool_rows(self, session_id):
        return [r for r in self.h.rows(session_id) if r["role"] == "tool"]

    def close(self):
        for manager in self.managers:
            if manager is not None:
                manager.close()

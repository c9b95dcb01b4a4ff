"""Tools the agent can call, confined to the workspace."""

from agent.tools.registry import (
    ApprovalRequest,
    ToolContext,
    ToolRegistry,
    ToolResult,
    default_registry,
)

__all__ = ["ApprovalRequest", "ToolContext", "ToolRegistry", "ToolResult", "default_registry"]

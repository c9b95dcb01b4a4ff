"""The scripted model server: demo model, test double and benchmark peer."""

from agent.scripted.script import (
    EXHAUSTED_MESSAGE,
    Reply,
    RequestInfo,
    Script,
    ScriptPlayer,
    ToolCall,
)
from agent.scripted.server import RecordedRequest, ScriptedServer

__all__ = [
    "EXHAUSTED_MESSAGE",
    "RecordedRequest",
    "Reply",
    "RequestInfo",
    "Script",
    "ScriptPlayer",
    "ScriptedServer",
    "ToolCall",
]

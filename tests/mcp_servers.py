"""MCP servers for the tests, written with the SDK's MCPServer (FastMCP in SDK 1.x).

`python tests/mcp_servers.py MODE [--http PORT]` runs one over stdio (or streamable HTTP):

- normal: echo, add, a picture (broken bytes), a screenshot (a real 8x6 PNG), structured output,
  a prompt, a slow tool, a secret printer
- crash: like normal, plus `crash` (writes to stderr, then exits 3)
- writer: like normal, plus `write_note` (writes a file where it is told)
- changing: `grow` adds a tool and tells the client (notifications/tools/list_changed)
- hang_call: `hang` never returns (and the server answers nothing after it: a wedged server)
- hostile: weird tool names (dots, spaces, unicode, 200 characters, clashes), a huge schema,
  a description with escape sequences
- many: 60 tools with fat schemas (the tool-search budget)
- huge_list: 600 tools
- flood: writes megabytes to stderr while it serves
- banner: prints a banner line (not JSON) and an endless line of 20 MB to stdout first
- list_flood: `flood` sends `count` notifications/tools/list_changed at once
- huge_result: like normal, plus `huge` (a 17 MB result: over the 16 MB message bound) and
  `endless` (writes a line to stdout that never ends)
- orphan: like normal, but first starts `setsid sleep 1000` (a grandchild in a session of its
  own, out of the server's process group) and writes its pid to the file named after MODE
- exit_at_start: writes a line to stderr and exits 1 before answering anything
- hang_init: reads stdin and never answers (a server that hangs on initialize)
- hang_init_last_words: the same, and writes to stderr only as it is stopped

Helpers for tests: `stdio_entry(mode)` (a config.yaml `mcp_servers` entry) and `HttpServer`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# The modes that stand for servers failing at start-up say so at once: importing the SDK
# first could take longer than a loaded machine's start-up timeout in the tests.
_LIGHT_MODES = ("exit_at_start", "hang_init", "hang_init_last_words")
if not (__name__ == "__main__" and sys.argv[1:2] and sys.argv[1] in _LIGHT_MODES):
    from mcp.server.mcpserver import Context  # module level: the tools' annotations name it

SCRIPT = str(Path(__file__).resolve())
SECRET_IN_OUTPUT = "sk-mcp-secret-0123456789abcdef"
SCREENSHOT_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAGCAIAAABxZ0isAAAAHUlEQVR4nGM8ISfHgA0wMTAwWDx6iCnBiE8HlSQA"
    "6/AEDjLTuEkAAAAASUVORK5CYII="
)
"""The base64 of the 8x6 PNG the `screenshot` tool returns (G4)."""


_DIRECT_MODES = (*_LIGHT_MODES, "orphan")
"""Started as their own process, not forked by the zygote: light ones need no warm SDK, and
`orphan` is about the server's own process tree."""


def stdio_entry(mode: str, **extra: Any) -> dict[str, Any]:
    """A config.yaml `mcp_servers` entry running this script in `mode` over stdio (a server
    forked by this test process's warm zygote, tests/mcp_zygote.py, where it can)."""
    if mode not in _DIRECT_MODES:
        from mcp_zygote import launcher_args

        launched = launcher_args([mode])
        if launched is not None:
            return {"command": sys.executable, "args": launched, **extra}
    return {"command": sys.executable, "args": [SCRIPT, mode], **extra}


def free_port() -> int:
    """A TCP port free on the loopback right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class HttpServer:
    """This script in `mode` over streamable HTTP, in its own process on the loopback."""

    def __init__(self, mode: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        from mcp_zygote import launcher_args

        args = [mode, "--http", str(self.port)]
        self.process = subprocess.Popen(
            [sys.executable, *(launcher_args(args) or [SCRIPT, *args])],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError(f"the {mode} HTTP server exited") from None
                time.sleep(0.05)  # a child process's port: nothing to wait on but the socket
        raise RuntimeError(f"the {mode} HTTP server did not listen in time")

    def stop(self) -> None:
        """Kill the server."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)


def _server(mode: str) -> Any:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.prompts.base import UserMessage
    from mcp.types import ImageContent, TextContent, ToolAnnotations

    app = MCPServer(f"test-{mode}", log_level="ERROR")

    @app.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def echo(text: str) -> str:
        """Echo the text back. A second sentence that the catalogue leaves out."""
        return f"echo: {text}"

    @app.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @app.tool()
    def picture() -> list[Any]:
        """Return a small picture and a caption."""
        return [
            TextContent(type="text", text="a red dot"),
            ImageContent(type="image", data="iVBORw0KGgo" * 100, mime_type="image/png"),
        ]

    @app.tool()
    def screenshot() -> list[Any]:
        """Return a real (tiny) PNG screenshot and a caption."""
        return [
            TextContent(type="text", text="the screen"),
            ImageContent(type="image", data=SCREENSHOT_PNG, mime_type="image/png"),
        ]

    @app.tool()
    def weather(city: str) -> dict[str, Any]:
        """Structured weather for a city."""
        return {"city": city, "celsius": 21}

    @app.tool()
    def secret() -> str:
        """Print something that looks like a key."""
        return f"token={SECRET_IN_OUTPUT}"

    @app.tool()
    def big() -> str:
        """Five megabytes of text."""
        return "x" * 5_000_000

    @app.tool()
    def environment() -> str:
        """The names of the environment variables the server got."""
        return " ".join(sorted(os.environ))

    @app.tool()
    def fail() -> str:
        """Always fails."""
        raise ValueError("the tool broke on purpose")

    @app.prompt()
    def review(topic: str, tone: str = "kind") -> list[Any]:
        """Ask for a review of a topic."""
        return [UserMessage(f"Please review {topic}, in a {tone} tone.")]

    if mode == "writer":

        @app.tool()
        def write_note(path: str, text: str) -> str:
            """Write `text` into the file at `path` (as a local server does, unseen)."""
            Path(path).write_text(text)
            return f"wrote {path}"

    if mode == "crash":

        @app.tool()
        def crash() -> str:
            """Exit the server at once."""
            sys.stderr.write("fatal: the crash tool was called\n")
            sys.stderr.flush()
            os._exit(3)

    if mode == "changing":

        @app.tool()
        async def grow(ctx: Context) -> str:
            """Add the tool `grown` and tell the client."""
            from mcp.types import ToolListChangedNotification

            app.add_tool(lambda: "I am new", name="grown", description="A tool added later.")
            # On the call's own stream (related to it), as a server tells a change made by a
            # call: over streamable HTTP an unrelated notification takes the standalone GET
            # stream, which may reach the client after the result, or not at all when that
            # stream is not open yet; no client can wait for it then.
            await ctx.session.send_notification(
                ToolListChangedNotification(), related_request_id=ctx.request_id
            )
            return "grown"

    if mode == "list_flood":

        @app.tool()
        async def flood(ctx: Context, count: int) -> str:
            """Tell the client `count` times that the tool list changed."""
            for _ in range(count):
                await ctx.session.send_tool_list_changed()
            return "flooded"

    if mode == "hang_call":

        @app.tool()
        async def hang() -> str:
            """Never returns; the whole server is stuck in it (its event loop is blocked)."""
            time.sleep(3600)  # the hang is the point: a wedged server
            return "never"

        @app.tool()
        async def slow(seconds: float) -> str:
            """Returns after `seconds`; the server stays responsive meanwhile."""
            import anyio

            await anyio.sleep(seconds)
            return "slow done"

    if mode == "huge_result":

        @app.tool()
        def huge() -> str:
            """Seventeen megabytes of text."""
            return "h" * (17 * 1024 * 1024)

        @app.tool()
        def endless() -> str:
            """A line on stdout that never ends (the reply the client waits for never comes)."""
            wire = _wire_fd()
            chunk = b"z" * (1024 * 1024)
            os.write(wire, b'{"jsonrpc":"2.0","id":')
            while True:
                os.write(wire, chunk)

    if mode == "hostile":
        _hostile_tools(app)
    if mode == "many":
        _many_tools(app)
    if mode == "huge_list":
        for index in range(600):
            app.add_tool(lambda: "x", name=f"t{index}", description="one of many")
    return app


def _hostile_tools(app: Any) -> None:
    def make(text: str) -> Any:
        return lambda: text

    weird = ["dot.ted", "with space", "ünïcode", "x" * 200, "dot_ted", "slash/name", ""]
    for index, name in enumerate(weird):
        app.add_tool(make(f"weird {index}"), name=name or "_", description=f"weird tool {index}")
    app.add_tool(
        make("escape"),
        name="escapes",
        description="Title \x1b]0;pwned\x07 \x1b[31mred\x1b[0m \u202eevil",
    )
    app.add_tool(
        make("\x1b]0;pwned\x07\x1b[2J result \u202eevil"),
        name="\x1b[31mescaped\x1b[0m_name",
        description="A name and a result with escape sequences.",
    )

    @app.prompt(name="hostile", description="Prompt \x1b]0;pwned\x07 \x1b[2J\u202eevil")
    def hostile_prompt() -> str:
        return "hello"

    schema_tool = make("huge")
    app.add_tool(schema_tool, name="huge_schema", description="A tool with a huge schema.")
    tool = app._tool_manager.get_tool("huge_schema")
    tool.parameters = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "description": "x" * 100} for i in range(1000)},
    }


def _many_tools(app: Any) -> None:
    for index in range(60):

        def tool(query: str, limit: int = 10, verbose: bool = False, index: int = index) -> str:
            return f"result {index} for {query}"

        props = {
            "query": {"type": "string", "description": "What to look for. " * 12},
            "limit": {"type": "integer", "description": "How many results to return. " * 8},
            "verbose": {"type": "boolean", "description": "Say more about each result. " * 8},
        }
        app.add_tool(tool, name=f"tool_{index:02d}", description=f"Tool number {index}. " * 6)
        app._tool_manager.get_tool(f"tool_{index:02d}").parameters = {
            "type": "object",
            "properties": props,
            "required": ["query"],
        }


_STDOUT = os.fstat(1)
"""The wire at start: the SDK's stdio server moves it to a private descriptor, and fd 1 to
stderr (so a stray print cannot corrupt the protocol)."""


def _wire_fd() -> int:
    """The descriptor that now carries the wire (the same pipe as stdout at start)."""
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            info = os.fstat(int(name))
            if (info.st_dev, info.st_ino) == (_STDOUT.st_dev, _STDOUT.st_ino) and name != "1":
                return int(name)
    return 1


def _flood() -> None:
    import threading

    def spew() -> None:
        line = b"noise " * 200 + b"\n"
        for _ in range(20_000):  # ~24 MB
            try:
                os.write(2, line)
            except OSError:
                return
        os.write(2, b"flood: done\n")

    threading.Thread(target=spew, daemon=True).start()


def main(argv: list[str]) -> None:
    mode = argv[0]
    if mode == "exit_at_start":
        sys.stderr.write("error: missing configuration, cannot start\n")
        sys.exit(1)
    if mode == "hang_init":
        sys.stderr.write("hang_init: reading and never answering\n")
        sys.stderr.flush()
        for _line in sys.stdin:
            pass
        time.sleep(3600)  # stdin closed: still never answer
    if mode == "hang_init_last_words":
        for _line in sys.stdin:
            pass
        # Told to go (stdin closed): its last words come as it ends.
        sys.stderr.write("hang_init_last_words: giving up as I am stopped\n")
        sys.stderr.flush()
        sys.exit(3)
    if mode == "flood":
        _flood()
    if mode == "orphan":
        pid_file = argv[1]
        subprocess.Popen(
            [
                "sh",
                "-c",
                'setsid sleep 1000 & echo $! > "$0.tmp" && mv "$0.tmp" "$0"',
                pid_file,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ).wait()
    if mode == "banner":
        sys.stdout.write("Welcome to the banner server \x1b[31mv1\x1b[0m\n")
        sys.stdout.write("y" * 20_000_000 + "\n")
        sys.stdout.flush()
    app = _server(mode)
    if "--http" in argv:
        import anyio

        port = int(argv[argv.index("--http") + 1])
        anyio.run(lambda: app.run_streamable_http_async(port=port))
    else:
        app.run()


if __name__ == "__main__":
    main(sys.argv[1:])

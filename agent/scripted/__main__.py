"""`python -m agent.scripted --script FILE`: run the scripted model server until Ctrl-C."""

from __future__ import annotations

import argparse
import sys
import threading

from agent.scripted.script import Script
from agent.scripted.server import ScriptedServer


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser of the standalone server."""
    parser = argparse.ArgumentParser(
        prog="python -m agent.scripted",
        description="Serve a scripted model over the OpenAI and Anthropic wires.",
    )
    parser.add_argument("--script", help="script YAML file (default: the demo tour)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port (0: pick a free one)")
    parser.add_argument("--certfile", help="TLS certificate (PEM); serves https")
    parser.add_argument("--keyfile", help="TLS private key (PEM)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Start the server, print its URL and serve until interrupted."""
    args = build_parser().parse_args(argv)
    if args.keyfile and not args.certfile:
        print("--keyfile needs --certfile", file=sys.stderr)
        return 2
    try:
        script = Script.from_yaml(args.script) if args.script else Script.load_demo()
    except (OSError, ValueError) as exc:
        print(f"cannot load script: {exc}", file=sys.stderr)
        return 2
    server = ScriptedServer(
        script, host=args.host, port=args.port, certfile=args.certfile, keyfile=args.keyfile
    )
    server.start()
    print(f"scripted server listening on {server.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

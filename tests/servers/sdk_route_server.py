"""The Python SDK calendar server (sdk_server.py) behind a route of the application's own, the
way some third-party servers mount it: the route drops `Origin` and rewrites
`MCP-Protocol-Version` from the body before the SDK sees the request.

Why it exists: two real servers built like this answered a foreign Origin with 200 (HTTP-12
says 403) and served a request whose MCP-Protocol-Version header disagreed with its body
(HDR-01), because the SDK's own checks never see the headers the client sent. A default
campaign must find both; this server is the target that test runs against.

Usage:
  python sdk_route_server.py [--host 127.0.0.1] [--port 8000] [--json-response]
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import orjson
import uvicorn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdk_server import build_server  # noqa: E402 - a sibling fixture, not a package

VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


def body_version(body: bytes) -> str | None:
    """The protocol version a JSON-RPC request claims in params._meta, if it is readable."""
    try:
        msg = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    params = msg.get("params") if isinstance(msg, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(VERSION_KEY) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def behind_route(inner: Any) -> Any:
    """An ASGI app that forwards to `inner` without the client's Origin, and with an
    MCP-Protocol-Version header that always agrees with the body (the bug under test)."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await inner(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"origin"]
        version = body_version(body)
        if version is not None:
            headers = [(k, v) for k, v in headers if k.lower() != b"mcp-protocol-version"]
            headers.append((b"mcp-protocol-version", version.encode()))
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await inner({**scope, "headers": headers}, replay, send)

    return app


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Python SDK server behind a header-rewriting route")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--json-response", action="store_true")
    args = parser.parse_args(argv)
    sdk = build_server(None).streamable_http_app(streamable_http_path="/mcp", stateless_http=True,
                                                 json_response=args.json_response)
    app = behind_route(sdk)
    # The SDK app's lifespan starts its session manager; the wrapper passes lifespan events on.
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", lifespan="on")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A small calendar server on the official Python SDK (`mcp==2.3.0`), used as a real-world target.

Why it exists: the harness must be tried on servers it did not write. This one speaks the
stateless 2026-07-28 revision the way the SDK's own high-level tier does it, so its
quirks are the SDK's quirks, not ours.

Surface (the same on every third-party server under tests/servers/):
  tool     create_event(title, startsAt?)   startsAt missing -> input_required with one
                                            form elicitation; answered on the retry
  tool     echo(text)                       plain, never needs input
  resource calendar://week                  text/plain
  prompt   prepare_week(focus)              one user message

The SDK seals `requestState` with AES-GCM under a key it draws per process
(`RequestStateSecurity.ephemeral()`), so an MRTR retry that lands on another process is
refused. `--state-key` (or env MCP_GAUNTLET_STATE_KEY, >= 32 bytes) gives every instance
the same key, which makes cross-process retries work.

Usage:
  python sdk_server.py [--transport stdio|http] [--host 127.0.0.1] [--port 8000]
                       [--path /mcp] [--json-response] [--state-key KEY]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.server.request_state import RequestStateSecurity
from pydantic import BaseModel, Field

SERVER_NAME = "gauntlet-sdk-calendar"
STATE_KEY_ENV = "MCP_GAUNTLET_STATE_KEY"


class When(BaseModel):
    """The one field the create_event tool asks the user for when the caller omitted it."""

    startsAt: str = Field(description="Start time, ISO 8601 (e.g. 2026-08-03T09:00)")


def ask_start(startsAt: str | None = None) -> When | Elicit[When]:
    """Resolver: use the argument when given, otherwise elicit it (MRTR on 2026-07-28)."""
    if startsAt:
        return When(startsAt=startsAt)
    return Elicit("When does the event start?", When)


def build_server(state_key: str | None) -> MCPServer:
    """Build the server; a shared key replaces the SDK's per-process request-state key."""
    security = RequestStateSecurity(keys=[state_key]) if state_key else None
    mcp = MCPServer(
        SERVER_NAME,
        version="0.1.0",
        instructions="Calendar fixture for mcp-gauntlet tests.",
        request_state_security=security,
        log_level="WARNING",
    )

    @mcp.tool(description="Create a calendar event; asks for the start time when it is missing.")
    def create_event(
        title: str,
        when: Annotated[When, Resolve(ask_start)],
        startsAt: str | None = None,
    ) -> str:
        return f"created {title!r} at {when.startsAt}"

    @mcp.tool(description="Return the text unchanged.")
    def echo(text: str) -> str:
        return text

    @mcp.resource("calendar://week", name="week", mime_type="text/plain", description="This week's events.")
    def week() -> str:
        return "Mon 09:00 standup\nWed 14:00 review\n"

    @mcp.prompt(name="prepare_week", description="Plan the week around a focus.")
    def prepare_week(focus: str) -> str:
        return f"Plan my week. Focus: {focus}."

    return mcp


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Python SDK calendar server (mcp-gauntlet fixture)")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--path", default="/mcp")
    parser.add_argument("--json-response", action="store_true", help="answer application/json, never SSE")
    parser.add_argument("--state-key", default=os.environ.get(STATE_KEY_ENV), help="shared requestState key")
    args = parser.parse_args(argv)
    if args.state_key is not None and len(args.state_key.encode()) < 32:
        print("error: --state-key must be at least 32 bytes", file=sys.stderr)
        return 2
    mcp = build_server(args.state_key)
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
    if args.transport == "stdio":
        mcp.run("stdio")
    else:
        mcp.run(
            "streamable-http",
            host=args.host,
            port=args.port,
            streamable_http_path=args.path,
            stateless_http=True,
            json_response=args.json_response,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

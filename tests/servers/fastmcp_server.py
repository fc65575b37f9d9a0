"""A small calendar server on fastmcp 4.x, used as a real-world target.

Why it exists: fastmcp is the most used Python framework on top of the SDK; it has its own
tool/resource/prompt layer, banner, settings and HTTP app, so it fails differently from the bare
SDK. Same surface as sdk_server.py:
  tool     create_event(title, startsAt?)   startsAt missing -> input_required (form elicitation),
                                            written in fastmcp's documented "guard" pattern
  tool     echo(text)
  resource calendar://week
  prompt   prepare_week(focus)

fastmcp 4 cannot elicit imperatively on 2026-07-28 (ctx.elicit raises); a tool returns an
`InputRequiredResult` and reads `ctx.input_responses` on the retry, as fastmcp documents. The
tool is written that natural way and nothing more: fastmcp itself does not check that the client
declared the elicitation capability before such a tool asks (MRTR-05), so neither does the
fixture, and a finding about it is fastmcp's. `--check-capability` adds the check a careful
author would write by hand (-32021, META-05). requestState is sealed by the SDK boundary under a
per-process key unless --state-key (or MCP_TEMPEST_STATE_KEY, >= 32 bytes) is given.

Usage:
  python fastmcp_server.py [--transport stdio|http] [--host 127.0.0.1] [--port 8000]
                           [--path /mcp] [--json-response] [--state-key KEY]
                           [--host-origin-protection off|auto] [--check-capability]
"""

from __future__ import annotations

import argparse
import os
import sys

import mcp_types
from fastmcp import Context, FastMCP
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_types import (
    ClientCapabilities,
    ElicitationCapability,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    FormElicitationCapability,
    InputRequiredResult,
    MissingRequiredClientCapabilityErrorData,
)

SERVER_NAME = "tempest-fastmcp-calendar"
STATE_KEY_ENV = "MCP_TEMPEST_STATE_KEY"
ASK_KEY = "when"
WHEN_SCHEMA = {
    "type": "object",
    "properties": {
        "startsAt": {"type": "string", "description": "Start time, ISO 8601 (e.g. 2026-08-03T09:00)"}
    },
    "required": ["startsAt"],
}


def _require_form_elicitation(ctx: Context) -> None:
    """Refuse with -32021 when this request did not declare form elicitation (META-05, MRTR-05)."""
    caps = ctx.session.client_capabilities
    elicitation = caps.elicitation if caps is not None else None
    if elicitation is not None and (elicitation.form is not None or elicitation.url is None):
        return
    required = ClientCapabilities(elicitation=ElicitationCapability(form=FormElicitationCapability()))
    raise MCPError(
        code=mcp_types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        message="create_event needs form elicitation to ask for the start time",
        data=MissingRequiredClientCapabilityErrorData(required_capabilities=required).model_dump(
            by_alias=True, mode="json", exclude_none=True
        ),
    )


def _answered_start(ctx: Context) -> str | None:
    answer = (ctx.input_responses or {}).get(ASK_KEY)
    if isinstance(answer, ElicitResult) and answer.action == "accept" and answer.content:
        value = answer.content.get("startsAt")
        return value if isinstance(value, str) and value else None
    return None


def build_server(state_key: str | None, *, check_capability: bool = False) -> FastMCP:
    """Build the server; a shared key replaces the per-process request-state key."""
    security = RequestStateSecurity(keys=[state_key]) if state_key else None
    mcp = FastMCP(
        SERVER_NAME,
        version="0.1.0",
        instructions="Calendar fixture for mcp-tempest tests.",
        request_state_security=security,
    )

    @mcp.tool(description="Create a calendar event; asks for the start time when it is missing.")
    def create_event(title: str, ctx: Context, startsAt: str | None = None) -> str | InputRequiredResult:
        start = startsAt or _answered_start(ctx)
        if start is None:
            if check_capability:
                _require_form_elicitation(ctx)
            ask = ElicitRequest(
                params=ElicitRequestFormParams(
                    message="When does the event start?", requested_schema=WHEN_SCHEMA
                )
            )
            return InputRequiredResult(input_requests={ASK_KEY: ask}, request_state=f"title={title}")
        return f"created {title!r} at {start}"

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
    parser = argparse.ArgumentParser(description="fastmcp calendar server (mcp-tempest fixture)")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--path", default="/mcp")
    parser.add_argument("--json-response", action="store_true", help="answer application/json, never SSE")
    parser.add_argument("--state-key", default=os.environ.get(STATE_KEY_ENV), help="shared requestState key")
    parser.add_argument(
        "--host-origin-protection",
        choices=["off", "auto"],
        default="off",
        help="fastmcp's Host/Origin guard; off is fastmcp 4's default (answers any Origin)",
    )
    parser.add_argument("--check-capability", action="store_true",
                        help="refuse create_event with -32021 when the client did not declare form elicitation")
    args = parser.parse_args(argv)
    if args.state_key is not None and len(args.state_key.encode()) < 32:
        print("error: --state-key must be at least 32 bytes", file=sys.stderr)
        return 2
    mcp = build_server(args.state_key, check_capability=args.check_capability)
    if args.transport == "stdio":
        mcp.run("stdio", show_banner=False)
    else:
        mcp.run(
            "http",
            show_banner=False,
            host=args.host,
            port=args.port,
            path=args.path,
            stateless_http=True,
            json_response=args.json_response,
            host_origin_protection=False if args.host_origin_protection == "off" else "auto",
            log_level="WARNING",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

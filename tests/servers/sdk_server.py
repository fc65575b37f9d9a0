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

mcp 2.3.0 offers two ways to write a tool that asks for input on 2026-07-28, and this fixture
uses either (`--mrtr`): `body` (the default) returns an `InputRequiredResult` from the tool body
and reads `ctx.input_responses` on the retry, the way fastmcp tools do it; `resolve` declares an
`Annotated[When, Resolve(fn)]` parameter whose resolver returns `Elicit(...)`. The SDK checks the
client's elicitation capability only on the second way (-32021); on the first it sends the
elicitation to a client that never declared it (MRTR-05). `ctx.elicit()` is no third way: on
2026-07-28 it fails with -32600 (no back-channel).

The SDK seals `requestState` with AES-GCM under a key it draws per process
(`RequestStateSecurity.ephemeral()`), so an MRTR retry that lands on another process is
refused. `--state-key` (or env MCP_TEMPEST_STATE_KEY, >= 32 bytes) gives every instance
the same key, which makes cross-process retries work.

`--auth-issuer URL` (HTTP) makes it an OAuth resource server the way the SDK's resource-server
tier does it: `AuthSettings` (issuer, this server's URL as resource, required scope `mcp`,
`validate_token_resource` so the SDK's bearer middleware refuses a token for another resource)
and a `TokenVerifier` of ours that checks the JWT with joserfc against the issuer's JWKS
(signature, algorithm, iss, exp/nbf), which is the part the SDK leaves to the application.

Usage:
  python sdk_server.py [--transport stdio|http] [--host 127.0.0.1] [--port 8000]
                       [--path /mcp] [--json-response] [--state-key KEY] [--mrtr body|resolve]
                       [--auth-issuer URL]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.server.request_state import RequestStateSecurity
from mcp_types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult
from pydantic import BaseModel, Field

SERVER_NAME = "tempest-sdk-calendar"
STATE_KEY_ENV = "MCP_TEMPEST_STATE_KEY"


class When(BaseModel):
    """The one field the create_event tool asks the user for when the caller omitted it."""

    startsAt: str = Field(description="Start time, ISO 8601 (e.g. 2026-08-03T09:00)")


def ask_start(startsAt: str | None = None) -> When | Elicit[When]:
    """Resolver: use the argument when given, otherwise elicit it (MRTR on 2026-07-28)."""
    if startsAt:
        return When(startsAt=startsAt)
    return Elicit("When does the event start?", When)


ASK_KEY = "when"


def _answered_start(ctx: Context) -> str | None:
    answer = (ctx.input_responses or {}).get(ASK_KEY)
    if isinstance(answer, ElicitResult) and answer.action == "accept" and answer.content:
        value = answer.content.get("startsAt")
        return value if isinstance(value, str) and value else None
    return None


class JoseVerifier:
    """The application's half of the SDK's resource-server support: verify the JWT itself."""

    def __init__(self, issuer: str) -> None:
        import json
        import urllib.request

        from joserfc.jwk import KeySet

        with urllib.request.urlopen(issuer + "/.well-known/oauth-authorization-server", timeout=10) as resp:
            meta = json.loads(resp.read())
        with urllib.request.urlopen(meta["jwks_uri"], timeout=10) as resp:
            self.keys = KeySet.import_key_set(json.loads(resp.read()))
        self.issuer = issuer

    async def verify_token(self, token: str):  # -> AccessToken | None
        from joserfc import jwt
        from joserfc.errors import JoseError
        from mcp.server.auth.provider import AccessToken

        try:
            claims = jwt.decode(token, self.keys, algorithms=["RS256"]).claims
            jwt.JWTClaimsRegistry(leeway=5, iss={"essential": True, "value": self.issuer},
                                  exp={"essential": True}).validate(claims)
        except (JoseError, ValueError, TypeError):
            return None
        aud = claims.get("aud")
        scope = claims.get("scope")
        return AccessToken(token=token, client_id=str(claims.get("client_id", "")),
                           scopes=scope.split() if isinstance(scope, str) else [],
                           expires_at=claims.get("exp"), resource=aud if isinstance(aud, str) else None,
                           subject=claims.get("sub"))


def build_server(state_key: str | None, mrtr: str = "body", *, auth_issuer: str | None = None,
                 resource: str | None = None) -> MCPServer:
    """Build the server; a shared key replaces the SDK's per-process request-state key."""
    security = RequestStateSecurity(keys=[state_key]) if state_key else None
    auth: dict = {}
    if auth_issuer is not None:
        from mcp.server.auth.settings import AuthSettings

        auth = {"auth": AuthSettings(issuer_url=auth_issuer, resource_server_url=resource, required_scopes=["mcp"],
                                     validate_token_resource=True),
                "token_verifier": JoseVerifier(auth_issuer)}
    mcp = MCPServer(
        SERVER_NAME,
        version="0.1.0",
        instructions="Calendar fixture for mcp-tempest tests.",
        request_state_security=security,
        log_level="WARNING",
        **auth,
    )

    if mrtr == "resolve":

        @mcp.tool(description="Create a calendar event; asks for the start time when it is missing.")
        def create_event(
            title: str,
            when: Annotated[When, Resolve(ask_start)],
            startsAt: str | None = None,
        ) -> str:
            return f"created {title!r} at {when.startsAt}"

    else:

        @mcp.tool(name="create_event", description="Create a calendar event; asks for the start time when it is missing.")
        def create_event_body(
            title: str, ctx: Context, startsAt: str | None = None
        ) -> str | InputRequiredResult:
            start = startsAt or _answered_start(ctx)
            if start is None:
                ask = ElicitRequest(params=ElicitRequestFormParams(
                    message="When does the event start?", requested_schema=When.model_json_schema()))
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
    parser = argparse.ArgumentParser(description="Python SDK calendar server (mcp-tempest fixture)")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--path", default="/mcp")
    parser.add_argument("--json-response", action="store_true", help="answer application/json, never SSE")
    parser.add_argument("--state-key", default=os.environ.get(STATE_KEY_ENV), help="shared requestState key")
    parser.add_argument("--mrtr", choices=["body", "resolve"], default="body",
                        help="how create_event asks: InputRequiredResult from the body, or a Resolve(...) parameter")
    parser.add_argument("--auth-issuer", default=None, help="HTTP: a resource server trusting this issuer")
    args = parser.parse_args(argv)
    if args.state_key is not None and len(args.state_key.encode()) < 32:
        print("error: --state-key must be at least 32 bytes", file=sys.stderr)
        return 2
    mcp = build_server(args.state_key, args.mrtr, auth_issuer=args.auth_issuer,
                       resource=f"http://{args.host}:{args.port}{args.path}")
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

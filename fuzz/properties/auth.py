"""A protected server checks every token it is shown (AUTH-01..13), under `fuzz --auth`.

Each example is one MCP request carrying one token case (`strategies.auth_tokens`): a valid
token, none, a malformed header, or a token that differs from a valid one in exactly one check
(audience, expiry, not-before, issuer, signature, algorithm, key, scope, or where it travels).
The coverage phase sends every case once with a plain tools/list; exploring then pairs the cases
with the calls the server offers, so a check skipped only on some methods is found too. The
oracle's AUTH rules judge the reaction from the case recorded with the request; this property
adds no relational check. It applies only when the harness runs an authorization server.
"""

from __future__ import annotations

from hypothesis import strategies as st

from mcp_tempest.fuzz.properties.base import Context, Probe, Property
from mcp_tempest.fuzz.properties.case import Case, Step
from mcp_tempest.fuzz.properties.common import Call, CaseBuilder, surface_calls
from mcp_tempest.strategies.auth_tokens import METADATA_AT, TOKEN_CASES
from mcp_tempest.targets import auth_client, wire


class AuthProperty(Property):
    name = "auth"
    title = "a protected server serves valid tokens and refuses every other credential as the spec says"
    eras = frozenset({"modern", "legacy"})
    needs_auth = True

    def applicable(self, ctx: Context) -> str | None:
        if ctx.transport != "http":
            return "authorization is an HTTP matter"
        return None

    def cases(self, ctx: Context) -> st.SearchStrategy[Case]:
        return st.builds(self._build, st.sampled_from(sorted(TOKEN_CASES)), surface_calls(ctx.surface, mrtr=False))

    def coverage(self, ctx: Context) -> list[Probe]:
        metadata = Case(self.name, [Step(proc=0, raw=b"", headers=auth_client.directive(name), label=name,
                                         mutation=name, http_method="GET") for name in METADATA_AT],
                        warm=[0], params={"token_case": "metadata"})
        return [*(Probe(f"token-{name}", case.rule, self._build(name, Call("tools/list")))
                  for name, case in TOKEN_CASES.items()), Probe("protected-resource-metadata", "AUTH-14", metadata)]

    def _build(self, token_case: str, call: Call) -> Case:
        b = CaseBuilder(self.name)
        k = b.call(0, call, label=f"token-{token_case}")
        step: Step = b.steps[k]
        assert step.frame is not None
        step.headers = wire.http_headers(step.frame, input_schema=call.input_schema) | \
            auth_client.directive(token_case)
        step.mutation = f"token-{token_case}"
        return b.build(warm=[0], params={"token_case": token_case})


PROPERTY = AuthProperty()

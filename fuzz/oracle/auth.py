"""Authorization: the server as an OAuth 2.1 resource server (AUTH-*), judged under `--auth`.

DIGEST has one row for this (HTTP-13, status codes only, from `basic/authorization/index.mdx`).
The rows below refine it in DIGEST's style; each says where it comes from. "MCP auth" is the MCP
specification's authorization page (2026-07-28 `basic/authorization/index.mdx`, sections Token
Handling, Access Token Usage, Error Handling, Protected Resource Metadata Discovery); RFC 6750 is
Bearer token usage, RFC 8707 resource indicators, RFC 9068 the JWT access token profile, RFC 9728
protected resource metadata, RFC 9110 HTTP semantics.

| ID | Rule | Strength | Source |
| --- | --- | --- | --- |
| AUTH-01 | A request with a valid token (the configured issuer's key, this resource as audience, in time, the scope the resource advertises) is served, not refused with 401/403. | SHOULD | MCP auth §Access Token Usage; RFC 6750 §2.1 |
| AUTH-02 | A request without a token gets **401**. | MUST | MCP auth §Error Handling ("Authorization required or token invalid"); RFC 6750 §3.1 |
| AUTH-03 | A token issued for another resource (its `aud` is not this server) is refused with **401**. | MUST | MCP auth §Token Handling ("MUST validate that access tokens were issued specifically for them"); RFC 8707 §2; RFC 9068 §4 |
| AUTH-04 | An expired token (`exp` passed) is refused with **401**. | MUST | MCP auth §Error Handling ("Invalid or expired tokens MUST receive a HTTP 401"); RFC 9068 §4; RFC 7519 §4.1.4 |
| AUTH-05 | A token not yet valid (`nbf` in the future) is refused with **401**. | MUST | RFC 9068 §4 (validation per RFC 7519 §4.1.5); MCP auth §Error Handling |
| AUTH-06 | A token from another issuer (`iss` is not the configured authorization server) is refused with **401**. | MUST | RFC 9068 §4 ("MUST validate that the iss claim exactly matches"); MCP auth §Token Handling |
| AUTH-07 | A token whose signature does not verify with the issuer's JWKS (altered, `alg: none`, a key the JWKS does not publish) is refused with **401**. | MUST | RFC 9068 §4 (signature validation; `none` MUST NOT be accepted); RFC 7515; MCP auth §Token Handling |
| AUTH-08 | A malformed Authorization header (another scheme, an empty or unparseable bearer value) is refused with **400** or **401**. | MUST | RFC 6750 §3.1 (invalid_request 400, invalid_token 401) |
| AUTH-09 | A valid token without the scope the resource requires gets **403** (`insufficient_scope`). | MUST | MCP auth §Error Handling / Scope Challenge Handling; RFC 6750 §3.1; DIGEST HTTP-13 |
| AUTH-10 | A token in the URI query string (no Authorization header) is not accepted: **401**. | SHOULD | MCP auth §Access Token Usage (tokens MUST NOT travel in the query string); RFC 6750 §2.3, §5.3 |
| AUTH-11 | A 401 carries a `WWW-Authenticate` header (Bearer challenge); so does a 403 for insufficient scope. | MUST | RFC 9110 §15.5.2, §11.6.1; RFC 6750 §3; MCP auth §Protected Resource Metadata Discovery |
| AUTH-12 | The 401 challenge names the protected resource metadata (`resource_metadata` parameter). | SHOULD | RFC 9728 §5.1; MCP auth §Protected Resource Metadata Discovery (header or well-known URI) |
| AUTH-13 | The 403 challenge for insufficient scope says `error="insufficient_scope"`. | MUST | MCP auth §Scope Challenge Handling; RFC 6750 §3.1; DIGEST HTTP-13 |
| AUTH-14 | The protected resource metadata is served (unauthenticated) at the endpoint's RFC 9728 well-known URI, or at the host's root one, and its `resource` is the endpoint's URL. | MUST | MCP auth §Authorization Server Discovery ("MUST implement OAuth 2.0 Protected Resource Metadata"); RFC 9728 §3, §3.3 |
| AUTH-15 | That document's `authorization_servers` names the issuer the server was configured with. | MUST | MCP auth §Authorization Server Location; RFC 9728 §2 |

Each AUTH-01..10 rule judges the requests whose token case (`strategies.auth_tokens`) names it;
the case travels with the request as the directive the driver recorded, so a replay is judged by
the same rows. Nothing here fires on a run without `--auth` (no request carries a directive).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from mcp_tempest.fuzz.oracle.exchange import Exchange, Pair
from mcp_tempest.fuzz.oracle.facts import header
from mcp_tempest.fuzz.oracle.model import BOTH_ERAS, RULES, Violation, rule
from mcp_tempest.strategies.auth_tokens import (
    AUTH_DIRECTIVE,
    ISSUER_HEADER,
    METADATA_AT,
    RESOURCE_HEADER,
    TokenCase,
    case_of_headers,
)

_RESOURCE_METADATA: Final = re.compile(r'(?:^|[\s,])resource_metadata\s*=\s*"?[^",\s]+', re.I)
_INSUFFICIENT: Final = re.compile(r'(?:^|[\s,])error\s*=\s*"?insufficient_scope"?', re.I)


def token_case(pair: Pair) -> TokenCase | None:
    """The token case a request was sent with (None: auth not in play for it)."""
    return case_of_headers(pair.headers)


def _served(x: Exchange, pair: Pair, status: int | None) -> bool:
    return any(said.kind == "result" for _, said in x.answers(pair)) or (status is not None and 200 <= status < 300)


def _challenge(x: Exchange, pair: Pair) -> tuple[int, str | None] | None:
    """(event index, WWW-Authenticate value or None) of the response that carried the status."""
    for i in (*pair.responses, *pair.stream, *pair.http):
        event = x.events[i]
        if event.status is not None:
            return i, header(event.headers or {}, "WWW-Authenticate")
    return None


def _judge_case(x: Exchange, rule_id: str) -> list[Violation]:
    if not x.transport.http_semantics:
        return []
    strength = RULES[rule_id].strength  # as the rule was registered below
    out: list[Violation] = []
    for pair in x.pairs:
        case = token_case(pair)
        if case is None or case.rule != rule_id:
            continue
        status = x.status_of(pair)
        at = _challenge(x, pair)
        index = at[0] if at else pair.index
        if case.served:
            # A 403 without a Bearer challenge is some other refusal (a bad Origin, HTTP-12).
            challenged = at is not None and at[1] is not None and "bearer" in at[1].lower()
            if status == 401 or (status == 403 and challenged):
                out.append(Violation(rule_id, strength, f"a valid token was refused with HTTP {status}",
                                     "the token is the issuer's, for this resource, in time and in scope",
                                     pair.method, index, probe=f"token-{case.name}"))
        elif _served(x, pair, status):
            out.append(Violation(rule_id, strength, f"token case {case.name} was served",
                                 f"{case.description}: expected HTTP {'/'.join(map(str, sorted(case.statuses)))}",
                                 pair.method, index, probe=f"token-{case.name}"))
        elif status is not None and status not in case.statuses:
            out.append(Violation(rule_id, strength, f"token case {case.name} answered with HTTP {status}",
                                 f"{case.description}: expected HTTP {'/'.join(map(str, sorted(case.statuses)))}",
                                 pair.method, index, probe=f"token-{case.name}"))
    return out


# One plain function per token-case rule, named by its id: each judges the requests sent with
# the token cases that probe it (strategies/auth_tokens.TOKEN_CASES names each case's rule).


@rule("AUTH-01", "SHOULD", "a request with a valid token is served, not refused with 401/403", eras=BOTH_ERAS)
def auth_01(x: Exchange) -> list[Violation]:
    return _judge_case(x, "AUTH-01")


@rule("AUTH-02", "MUST", "a request without a token gets 401", eras=BOTH_ERAS)
def auth_02(x: Exchange) -> list[Violation]:
    return _judge_case(x, "AUTH-02")


@rule("AUTH-03", "MUST", "a token issued for another resource (aud) is refused with 401", eras=BOTH_ERAS)
def auth_03(x: Exchange) -> list[Violation]:
    return _judge_case(x, "AUTH-03")


@rule("AUTH-04", "MUST", "an expired token is refused with 401", eras=BOTH_ERAS)
def auth_04(x: Exchange) -> list[Violation]:
    return _judge_case(x, "AUTH-04")


@rule("AUTH-05", "MUST", "a token not yet valid (nbf) is refused with 401", eras=BOTH_ERAS)
def auth_05(x: Exchange) -> list[Violation]:
    return _judge_case(x, "AUTH-05")


@rule("AUTH-06", "MUST", "a token from another issuer is refused with 401", eras=BOTH_ERAS)
def auth_06(x: Exchange) -> list[Violation]:
    return _judge_case(x, "AUTH-06")


@rule("AUTH-07", "MUST", "a token whose signature does not verify (altered, alg none, unknown key) is refused with 401", eras=BOTH_ERAS)
def auth_07(x: Exchange) -> list[Violation]:
    return _judge_case(x, "AUTH-07")


@rule("AUTH-08", "MUST", "a malformed Authorization header is refused with 400 or 401", eras=BOTH_ERAS)
def auth_08(x: Exchange) -> list[Violation]:
    return _judge_case(x, "AUTH-08")


@rule("AUTH-09", "MUST", "a token without the required scope gets 403", eras=BOTH_ERAS)
def auth_09(x: Exchange) -> list[Violation]:
    return _judge_case(x, "AUTH-09")


@rule("AUTH-10", "SHOULD", "a token in the query string is not accepted (401)", eras=BOTH_ERAS)
def auth_10(x: Exchange) -> list[Violation]:
    return _judge_case(x, "AUTH-10")


def _challenged(x: Exchange) -> Iterator[tuple[Pair, TokenCase, int, int, str | None]]:
    """(request, its token case, status, answer index, WWW-Authenticate or None) of each
    request sent with a token case that got an HTTP status."""
    for pair in x.pairs:
        case = token_case(pair)
        status = x.status_of(pair)
        at = _challenge(x, pair) if case is not None and status is not None else None
        if case is not None and status is not None and at is not None:
            yield pair, case, status, at[0], at[1]


@rule("AUTH-11", "MUST", "a 401 (and a 403 for insufficient scope) carries a WWW-Authenticate challenge", eras=BOTH_ERAS)
def auth_11(x: Exchange) -> list[Violation]:
    return [Violation("AUTH-11", "MUST", f"HTTP {status} without WWW-Authenticate",
                      f"token case {case.name}: a client cannot learn how to authorize", pair.method, i)
            for pair, case, status, i, value in _challenged(x)
            if value is None and (status == 401 or (status == 403 and case.rule == "AUTH-09"))]


@rule("AUTH-12", "SHOULD", "the 401 challenge names the protected resource metadata (resource_metadata)",
      eras=BOTH_ERAS)
def auth_12(x: Exchange) -> list[Violation]:
    return [Violation("AUTH-12", "SHOULD", "the 401 challenge has no resource_metadata",
                      f"WWW-Authenticate: {value[:120]}", pair.method, i)
            for pair, _, status, i, value in _challenged(x)
            if status == 401 and value is not None and not _RESOURCE_METADATA.search(value)]


@rule("AUTH-13", "MUST", 'the 403 challenge for insufficient scope says error="insufficient_scope"', eras=BOTH_ERAS)
def auth_13(x: Exchange) -> list[Violation]:
    return [Violation("AUTH-13", "MUST", 'the 403 challenge lacks error="insufficient_scope"',
                      f"WWW-Authenticate: {value[:120]}", pair.method, i)
            for pair, case, status, i, value in _challenged(x)
            if status == 403 and case.rule == "AUTH-09" and value is not None and not _INSUFFICIENT.search(value)]


def _metadata_fetch(pair: Pair) -> str | None:
    """The metadata directive of a request (a GET of the well-known URI), or None."""
    name = header(pair.headers or {}, AUTH_DIRECTIVE)
    return name.strip() if name is not None and name.strip() in METADATA_AT else None


def _metadata_documents(x: Exchange) -> tuple[list[Pair], list[tuple[Pair, int, dict]]]:
    fetches = [p for p in x.pairs if _metadata_fetch(p)]
    docs = []
    for pair in fetches:
        for i in pair.responses or (*pair.stream, *pair.http):
            event = x.events[i]
            if event.status == 200 and isinstance(event.message, dict):
                docs.append((pair, i, event.message))
                break
    return fetches, docs


@rule("AUTH-14", "MUST", "the protected resource metadata is served at the endpoint's well-known URI (or the root "
      "one) and its resource is the endpoint URL", eras=BOTH_ERAS, scope="transcript")
def auth_14(x: Exchange) -> list[Violation]:
    fetches, docs = _metadata_documents(x)
    if not fetches or any(x.status_of(p) is None for p in fetches):
        return []  # not asked, or an answer is missing (a timeout is liveness, not this rule)
    if not docs:
        statuses = ", ".join(f"{_metadata_fetch(p)}: HTTP {x.status_of(p)}" for p in fetches)
        return [Violation("AUTH-14", "MUST", "no protected resource metadata at the well-known URIs", statuses,
                          None, fetches[0].index)]
    out: list[Violation] = []
    for pair, i, doc in docs:
        resource = header(pair.headers or {}, RESOURCE_HEADER)
        if resource and doc.get("resource") != resource:
            out.append(Violation("AUTH-14", "MUST", "the metadata's resource is not this endpoint",
                                 f"resource {doc.get('resource')!r}, endpoint {resource!r}", None, i))
    return out


@rule("AUTH-15", "MUST", "the protected resource metadata's authorization_servers names the configured issuer",
      eras=BOTH_ERAS, scope="transcript")
def auth_15(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for pair, i, doc in _metadata_documents(x)[1]:
        issuer = header(pair.headers or {}, ISSUER_HEADER)
        servers = doc.get("authorization_servers")
        if issuer and (not isinstance(servers, list) or issuer not in servers):
            out.append(Violation("AUTH-15", "MUST", "the metadata does not name the issuer",
                                 f"authorization_servers {servers!r}", None, i))
    return out


def refused_by_auth(x: Exchange, send_index: int) -> bool:
    """Whether the request at `send_index` is the authorization layer's business: refused for its
    token as its case demands, or a metadata fetch. The other rules do not judge its answer."""
    pair = x.pair_at.get(send_index)
    if pair is None:
        return False
    if _metadata_fetch(pair):
        return True
    case = token_case(pair)
    return case is not None and not case.served and x.status_of(pair) in (400, 401, 403)

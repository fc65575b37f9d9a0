"""DIGEST section 14: error codes a 2026-07-28 server must not use, or must use only as defined.

The section's table has no rule ids; the lead's convention names them here:
  ERR-RETIRED   -32042 (URL elicitation required, retired)                    MUST NOT
  ERR-DRAFT     -32001/-32003/-32004 (pre-release numbers of -32020/1/2)      SHOULD NOT (stale draft/SDK)
  ERR-LEGACY    other -32000..-32019 (legacy implementation-defined range)    SHOULD NOT
  ERR-RESERVED  -32020..-32099 codes the spec does not define, and -32020 off HTTP  MUST NOT
and -32002 (resource not found before 2026-07-28) is RES-04's "must not emit -32002".
Data and HTTP status of -32021/-32022 are META-05/META-06, of -32020 HDR-01..03, of -32601 HDR-05.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from mcp_tempest.fuzz.oracle.exchange import Exchange
from mcp_tempest.fuzz.oracle.facts import Said
from mcp_tempest.fuzz.oracle.model import Violation, rule
from mcp_tempest.targets import wire

DEFINED_RESERVED: Final = frozenset({wire.HEADER_MISMATCH, wire.MISSING_CLIENT_CAPABILITY,
                                     wire.UNSUPPORTED_PROTOCOL_VERSION})
DRAFT_CODES: Final = {-32001: -32020, -32003: -32021, -32004: -32022}
RETIRED_RESOURCE_NOT_FOUND: Final = -32002
RETIRED_URL_ELICITATION: Final = -32042


def modern_errors(x: Exchange) -> Iterator[tuple[int, Said, str | None]]:
    """(recv index, said, method) for every error answering something that was not a legacy-version request."""
    for i, said in x.said.items():
        if said.kind != "error" or said.code is None:
            continue
        send = x.answer_of.get(i)
        pair = x.pair_at.get(send) if send is not None else None
        if pair is not None and pair.sent.legacy:
            continue  # a dual-era server answers legacy requests by legacy rules
        yield i, said, pair.method if pair is not None else None


@rule("RES-04", "MUST", "a 2026-07-28 server never emits -32002 (resource not found is -32602)")
def res_04(x: Exchange) -> list[Violation]:
    return [
        Violation("RES-04", "MUST", "retired code -32002", "resource not found is -32602 since 2026-07-28", method, i)
        for i, said, method in modern_errors(x)
        if said.code == RETIRED_RESOURCE_NOT_FOUND
    ]


@rule("ERR-RETIRED", "MUST", "the retired code -32042 is never emitted")
def err_retired(x: Exchange) -> list[Violation]:
    return [
        Violation("ERR-RETIRED", "MUST", "retired code -32042", "URL elicitation is an input request now", method, i)
        for i, said, method in modern_errors(x)
        if said.code == RETIRED_URL_ELICITATION
    ]


@rule("ERR-DRAFT", "SHOULD", "no pre-release draft numbers -32001/-32003/-32004 (stale draft or SDK)")
def err_draft(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for i, said, method in modern_errors(x):
        code = said.code
        if code in DRAFT_CODES:
            out.append(Violation("ERR-DRAFT", "SHOULD", f"draft error code {code}",
                                 f"released as {DRAFT_CODES[code]}; the server follows a stale draft", method, i))
    return out


@rule("ERR-LEGACY", "SHOULD", "new implementations do not use the legacy range -32000..-32019")
def err_legacy(x: Exchange) -> list[Violation]:
    return [
        Violation("ERR-LEGACY", "SHOULD", f"legacy-range error code {said.code}",
                  "use a code outside -32768..-32000 for application errors", method, i)
        for i, said, method in modern_errors(x)
        if said.code is not None and -32019 <= said.code <= -32000
        and said.code not in DRAFT_CODES and said.code != RETIRED_RESOURCE_NOT_FOUND
    ]


@rule("ERR-RESERVED", "MUST", "MCP-reserved codes -32020..-32099 only as the spec defines them")
def err_reserved(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for i, said, method in modern_errors(x):
        code = said.code
        if code is None or not -32099 <= code <= -32020 or code == RETIRED_URL_ELICITATION:
            continue
        if code not in DEFINED_RESERVED:
            out.append(Violation("ERR-RESERVED", "MUST", f"undefined MCP-reserved code {code}",
                                 "-32020..-32099 holds only -32020, -32021 and -32022", method, i))
        elif code == wire.HEADER_MISMATCH and x.transport.line_framed:
            out.append(Violation("ERR-RESERVED", "MUST", "-32020 on stdio",
                                 "HeaderMismatch is an HTTP header error; stdio has no headers", method, i))
    return out

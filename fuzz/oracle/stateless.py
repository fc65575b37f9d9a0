"""DIGEST section 15: statelessness over one connection (SL-2).

SL-2 (MUST): a server does not rely on earlier requests on the connection for context, the
protocol version included. The era lock is the case the oracle can see in one transcript: a stdio
process that, after a frame it could not read as a valid modern request, refuses a valid
2026-07-28 request with an era or version error (-32600, -32022) although the version is one
the server itself advertises and the request is one a fresh process serves. The bad frame
changed how the process answers what follows: the process is standing in for a session.

Why the comparison point matters: a refusal alone proves nothing (the server may refuse that
request anywhere). So the rule needs proof that the same request is served elsewhere: for
`server/discover` a DiscoverResult the caller already has (the campaign's start-of-run probe,
`judge(discover=...)`) or one seen in the transcript; for any other method a result to the same
method, under the same version, on another process of the transcript.

A process opened with the 2025-era handshake (`initialize`) is excused: VER-05 lets a dual-era
server keep that process in the old era, and what it refuses then is the handshake's business.
So is a process the server has already served by 2025-era rules (`legacy_context`: a claim-less
request answered with a legacy result pins it, as META-04's heuristic says). The broader dual-era
excuse (`dual_era_excuses`: any earlier frame that *could* be read as 2025-era) does not apply:
a frame the server refused (an error, nothing served) opens no era, and a process that is then
locked out of the modern era is the very violation (OWN_ERA_POLICY tells `judge` so).

A request that shared its id with another one in flight on the process (the RPC-05 probe) is not
judged: a -32600 "this id is in flight" is the right answer to one of them, and which frame an
answer under that id belongs to cannot be known.
"""

from __future__ import annotations

from typing import Final

from mcp_tempest.fuzz.oracle.exchange import LEGACY_OPENERS, Exchange, Pair
from mcp_tempest.fuzz.oracle.facts import describe, is_modern_version
from mcp_tempest.fuzz.oracle.framing import in_flight_groups
from mcp_tempest.fuzz.oracle.model import Violation, rule
from mcp_tempest.targets import wire

#: Rules that judge dual-era targets by their own era policy, not by `dual_era_excuses` (SL-11:
#: a GET or DELETE answered by a dual-era server's 2025 transport, fuzz/oracle/http_methods.py).
OWN_ERA_POLICY: Final = frozenset({"SL-2", "SL-11"})
#: The refusals an era lock answers with: "not a valid request here" and "unsupported version".
ERA_ERRORS: Final = frozenset({wire.INVALID_REQUEST, wire.UNSUPPORTED_PROTOCOL_VERSION})


def _valid_modern(x: Exchange, pair: Pair) -> bool:
    """A request the server must serve statelessly: well formed, a full `_meta` with a version
    the server advertises (so a version refusal is not the version's fault)."""
    s = pair.sent
    return (s.kind == "request" and s.envelope_ok and s.meta is not None and not s.version_missing
            and not s.caps_missing and is_modern_version(s.version) and not s.legacy_context
            and x.supported_versions is not None and s.version in x.supported_versions)


def _served_elsewhere(x: Exchange, pair: Pair) -> bool:
    if pair.method == "server/discover":
        return True  # x.supported_versions is known: a DiscoverResult was given or seen
    return any(other.proc != pair.proc and other.method == pair.method and other.sent.version == pair.sent.version
               and any(said.kind == "result" for _, said in x.answers(other)) for other in x.pairs)


@rule("SL-2", "MUST", "a process does not keep context (the era) from earlier requests", scope="transcript")
def sl_2(x: Exchange) -> list[Violation]:
    if not x.transport.line_framed or x.supported_versions is None:
        return []
    out: list[Violation] = []
    locked: set[int] = set()
    earlier: dict[int, list[Pair]] = {}
    shared_id = {p.index for group in in_flight_groups(x) for p in group}
    for pair in x.pairs:
        before = earlier.setdefault(pair.proc, [])
        before.append(pair)
        if pair.proc in locked or any(p.method in LEGACY_OPENERS for p in before):
            continue
        if not _valid_modern(x, pair) or pair.index in shared_id:
            continue
        bad = next((p for p in before[:-1] if not _valid_modern(x, p)), None)
        if bad is None:
            continue
        refusal = next(((i, said) for i, said in x.answers(pair) if said.kind == "error" and said.code in ERA_ERRORS),
                       None)
        if refusal is None or not _served_elsewhere(x, pair):
            continue
        i, said = refusal
        message = said.error.get("message") if isinstance(said.error, dict) else None
        out.append(Violation(
            "SL-2", "MUST", "a valid request is refused with an era error after an earlier bad request on the process",
            f"{pair.method} at {pair.sent.version} (advertised) got {said.code} {describe(message)} after the "
            f"earlier frame {describe(bad.sent.message if bad.sent.message is not None else bad.event.raw)} on the same process; a fresh process "
            "serves it", pair.method, i, reaction="a valid request refused with an era error after a bad request"))
        locked.add(pair.proc)  # one finding per locked process: every later request repeats it
    return out

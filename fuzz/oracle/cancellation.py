"""DIGEST §11: cancellation as the server sees it (CAN-04, CAN-06).

CAN-06  MUST NOT  the server sends `notifications/cancelled` only to end a `subscriptions/listen`
                  stream. Anything else (echoing a client's cancellation, announcing a failed
                  request) is a message a client cannot place: it has no request to cancel on the
                  server's behalf. On HTTP a cancelled notification on the listen request's own
                  stream is accepted as well (§18.1: accept either teardown signal).
CAN-04  SHOULD    after the client cancelled a request, no further progress or log messages for
                  it. The transport pages say MUST NOT, cancellation.mdx says SHOULD and CAN-05
                  lets a server ignore a cancellation of work it cannot stop, so this is filed at
                  SHOULD, and only for output the race cannot explain (§18.7): a message for the
                  cancelled request written after the server answered a request sent after the
                  cancellation. A late response itself is never flagged (the race, CAN-07).

The cancelled request is the latest request on the same process with that id (stdio only: on
HTTP a client cancels by closing the stream, CAN-02, and sends no notification).
"""

from __future__ import annotations

from typing import Any, Final

from mcp_tempest.fuzz.oracle.exchange import Exchange, Pair
from mcp_tempest.fuzz.oracle.facts import describe, same_id_value
from mcp_tempest.fuzz.oracle.model import Violation, rule
from mcp_tempest.fuzz.oracle.request_notifications import MESSAGE, PROGRESS, PROGRESS_TOKEN, progress_token

CANCELLED: Final = "notifications/cancelled"
LISTEN: Final = "subscriptions/listen"


def _request_id(message: Any) -> Any:
    params = message.get("params") if isinstance(message, dict) else None
    return params.get("requestId") if isinstance(params, dict) else None


def _legacy_proc(x: Exchange, proc: int) -> bool:
    return any(p.proc == proc and p.sent.legacy for p in x.pairs)


@rule("CAN-06", "MUST", "the server sends notifications/cancelled only to end a subscriptions/listen stream",
      scope="transcript")
def can_06(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for i, said in x.said.items():
        if said.kind != "notification" or said.message.get("method") != CANCELLED:
            continue
        event = x.events[i]
        target = _request_id(said.message)
        if x.transport.pairs_by_request:
            pair = x.pair_at.get(event.ref) if event.ref is not None else None
            if pair is None or pair.method == LISTEN or pair.sent.legacy:
                continue
            what = f"on the response stream of {pair.method}"
        else:
            if _legacy_proc(x, event.proc):
                continue  # a 2025-era session has server->client requests the server may cancel
            sent = [p for p in x.pairs if p.index < i and p.proc == event.proc and p.sent.has_id
                    and same_id_value(p.sent.id, target)]
            if any(p.method == LISTEN for p in sent):
                continue
            named = sent or [p for p in x.pairs if p.index < i and p.proc == event.proc
                             and p.sent.kind == "notification" and same_id_value(_request_id(p.sent.message), target)]
            if not named and event.proc in x.reused_procs:
                continue  # may end a listen stream an earlier example opened on this process
            what = f"requestId {describe(target)}, " + (f"a {sent[-1].method} request" if sent else
                                                         "no listen request of this process")
        out.append(Violation("CAN-06", "MUST", "notifications/cancelled that ends no listen stream", what,
                             None, i))
    return out


def _cancellations(x: Exchange) -> list[tuple[int, Pair]]:
    """(index of the harness's notifications/cancelled, the request it cancels), stdio only."""
    found: list[tuple[int, Pair]] = []
    if not x.transport.line_framed:
        return found
    for pair in x.pairs:
        if pair.sent.kind != "notification" or pair.method != CANCELLED:
            continue
        target = _request_id(pair.sent.message)
        earlier = [p for p in x.pairs if p.index < pair.index and p.proc == pair.proc and p.sent.kind == "request"
                   and same_id_value(p.sent.id, target)]
        if earlier and earlier[-1].method != LISTEN and not earlier[-1].sent.legacy:
            found.append((pair.index, earlier[-1]))
    return found


@rule("CAN-04", "SHOULD", "no progress or log messages for a request after its cancellation", scope="transcript")
def can_04(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for cancel, victim in _cancellations(x):
        proc = victim.proc
        later = [min(p.responses) for p in x.pairs if p.index > cancel and p.proc == proc and p.responses]
        if not later:
            continue
        settled = min(later)  # the server had read the cancellation and answered what came after it
        token = progress_token(victim)
        for i, said in x.said.items():
            if i <= settled or x.events[i].proc != proc or said.kind != "notification":
                continue
            method = said.message.get("method")
            params = said.message.get("params") if isinstance(said.message.get("params"), dict) else {}
            if method == PROGRESS:
                mine = token is not None and same_id_value(params.get(PROGRESS_TOKEN), token)
            elif method == MESSAGE:
                mine = x.request_scope(i) == [victim]
            else:
                mine = False
            if mine:
                out.append(Violation("CAN-04", "SHOULD", f"{method} for a cancelled request",
                                     f"{victim.method} id {describe(victim.sent.id)} was cancelled at event {cancel}; "
                                     f"the server answered a later request at event {settled}", victim.method, i))
    return out

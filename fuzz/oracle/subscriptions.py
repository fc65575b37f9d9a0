"""DIGEST §10: what a `subscriptions/listen` stream may carry (SUB-02..05).

SUB-02  MUST NOT  a notification type the client did not request: a list_changed whose filter
                  flag was not set, a resources/updated for a URI not subscribed (nor below one),
                  or an acknowledgement claiming to honour a type that was not asked for.
SUB-03  MUST      the first message of the subscription is
                  `notifications/subscriptions/acknowledged`; nothing precedes it.
SUB-04  MUST      every notification of the stream carries `_meta.subscriptionId` equal to the
                  listen request's id, type included (1 is not "1").
SUB-05  MUST NOT  request-scoped notifications (progress, log messages) on a listen stream.
SUB-08  MUST      a listen stream the server ends with a result names the subscription in it:
                  `_meta.subscriptionId` is the listen id, type included (that the result is a
                  complete SubscriptionsListenResult with that member at all is the schema's,
                  RT-06, reported once there). That it signals the end at all is a SHOULD (or a MUST,
                  by the cancellation page: DIGEST accepts either signal); when the harness shut
                  the server down (closed its stdin) with a listen open and neither signal came,
                  that is only a HEURISTIC: closing stdin is also the client closing the transport,
                  which SUB-09 calls an abrupt end that needs no reply.

Which notifications belong to a listen stream: over HTTP the listen POST's own SSE stream
(`Pair.stream`, the one pairing structure). Over stdio the ones written on that process after
the listen request that name it by `subscriptionId`, by value (so a 1-for-"1" mix-up is still
placed, and judged by SUB-04), plus listen-kind notifications naming no subscription while
exactly one listen is open. After the harness cancels the listen (stdio), nothing is judged:
notifications already under way may still arrive (CAN-07).
"""

from __future__ import annotations

from typing import Any, Final

from mcp_tempest.fuzz.oracle.exchange import Exchange, Pair
from mcp_tempest.fuzz.oracle.facts import describe, same_id_value
from mcp_tempest.fuzz.oracle.model import Violation, rule
from mcp_tempest.targets import wire

LISTEN: Final = "subscriptions/listen"
ACK: Final = "notifications/subscriptions/acknowledged"
UPDATED: Final = "notifications/resources/updated"
# list_changed notification -> the SubscriptionFilter flag that asks for it (SUB-01, SUB-10)
LIST_CHANGED: Final = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
}
LISTEN_KINDS: Final = frozenset({ACK, UPDATED, *LIST_CHANGED})
REQUEST_SCOPED: Final = frozenset({"notifications/progress", "notifications/message"})
_NONE: Final = object()


def _filter(pair: Pair) -> dict[str, Any] | None:
    wanted = (pair.sent.params or {}).get("notifications")
    return wanted if isinstance(wanted, dict) else None


def _subscription_id(message: Any) -> Any:
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get(wire.META_SUBSCRIPTION_ID, _NONE) if isinstance(meta, dict) else _NONE


def _listens(x: Exchange) -> list[Pair]:
    return [p for p in x.pairs if p.method == LISTEN and p.sent.kind == "request" and p.sent.id_readable
            and _filter(p) is not None and not p.sent.legacy]


def _cancel_index(x: Exchange, listen: Pair) -> int | None:
    for p in x.pairs:
        if p.index > listen.index and p.proc == listen.proc and p.method == "notifications/cancelled" \
                and p.sent.kind == "notification":
            params = p.sent.params or {}
            if same_id_value(params.get("requestId"), listen.sent.id):
                return p.index
    return None


def stream_of(x: Exchange) -> dict[int, list[int]]:
    """Listen send index -> the server notifications of its stream, in order (memoised)."""
    memo = x.memo.get("listen_streams")
    if memo is not None:
        return memo  # type: ignore[no-any-return]
    out: dict[int, list[int]] = {}
    listens = _listens(x)
    if x.transport.pairs_by_request:
        for p in listens:
            out[p.index] = [i for i in p.stream if x.said[i].kind == "notification"]
    else:
        ends = {p.index: _cancel_index(x, p) for p in listens}
        for i, said in x.said.items():
            if said.kind != "notification":
                continue
            proc = x.events[i].proc
            open_now = [p for p in listens if p.proc == proc and p.index < i
                        and (ends[p.index] is None or i < ends[p.index]) and not any(r < i for r in p.responses)]
            if not open_now:
                continue
            named = _subscription_id(said.message)
            method = said.message.get("method")
            if named is not _NONE:
                owners = [p for p in open_now if p.sent.id == named or str(p.sent.id) == str(named)]
                if len(owners) == 1:
                    out.setdefault(owners[0].index, []).append(i)
            elif method in LISTEN_KINDS and len(open_now) == 1:
                out.setdefault(open_now[0].index, []).append(i)
    x.memo["listen_streams"] = out
    return out


def _method(x: Exchange, i: int) -> Any:
    return x.said[i].message.get("method")


@rule("SUB-03", "MUST", "the first message of a subscription is its acknowledgement", scope="transcript")
def sub_03(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for notes in stream_of(x).values():
        if notes and _method(x, notes[0]) != ACK:
            out.append(Violation("SUB-03", "MUST", "a listen notification before the acknowledgement",
                                 f"first message {describe(_method(x, notes[0]))}", LISTEN, notes[0]))
    return out


@rule("SUB-04", "MUST", "every listen notification carries subscriptionId equal to the listen id (type kept)",
      scope="transcript")
def sub_04(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for index, notes in stream_of(x).items():
        want = x.pair_at[index].sent.id
        for i in notes:
            got = _subscription_id(x.said[i].message)
            if got is _NONE or not same_id_value(got, want):
                what = "no subscriptionId" if got is _NONE else f"subscriptionId {describe(got)}"
                out.append(Violation("SUB-04", "MUST", "listen notification with the wrong subscriptionId",
                                     f"{_method(x, i)}: {what}, the listen request's id is {describe(want)}",
                                     LISTEN, i))
    return out


@rule("SUB-05", "MUST", "no progress or log notification on a listen stream", scope="transcript")
def sub_05(x: Exchange) -> list[Violation]:
    return [Violation("SUB-05", "MUST", "a request-scoped notification on a listen stream",
                      f"{_method(x, i)} is never sent on a subscription", LISTEN, i)
            for notes in stream_of(x).values() for i in notes if _method(x, i) in REQUEST_SCOPED]


def _asked_uri(uri: Any, subscribed: list[Any]) -> bool:
    return isinstance(uri, str) and any(isinstance(s, str) and (uri == s or uri.startswith(s.rstrip("/") + "/"))
                                        for s in subscribed)


@rule("SUB-02", "MUST", "a listen stream carries only the notification types the client requested",
      scope="transcript")
def sub_02(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for index, notes in stream_of(x).items():
        wanted = _filter(x.pair_at[index]) or {}
        subscribed = wanted.get("resourceSubscriptions") if isinstance(wanted.get("resourceSubscriptions"), list) else []
        for i in notes:
            method = _method(x, i)
            params = x.said[i].message.get("params") if isinstance(x.said[i].message.get("params"), dict) else {}
            bad = ""
            if method in LIST_CHANGED and wanted.get(LIST_CHANGED[method]) is not True:
                bad = f"{method} without {LIST_CHANGED[method]} in the filter"
            elif method == UPDATED and not _asked_uri(params.get("uri"), subscribed):
                bad = f"{method} for {describe(params.get('uri'))}, not a subscribed URI"
            elif method == ACK and isinstance(params.get("notifications"), dict):
                honoured = params["notifications"]
                extra = [k for k, v in honoured.items() if k in LIST_CHANGED.values() and v is True
                         and wanted.get(k) is not True]
                uris = honoured.get("resourceSubscriptions")
                extra += [u for u in (uris if isinstance(uris, list) else []) if u not in subscribed]
                if extra:
                    bad = f"the acknowledgement honours what was not asked for: {describe(extra)}"
            if bad:
                out.append(Violation("SUB-02", "MUST", "a notification type the client did not request", bad,
                                     LISTEN, i))
    return out


def _cancelled_by_server(x: Exchange, listen: Pair) -> bool:
    """The other signal SUB-08 accepts: the server's own notifications/cancelled naming the listen."""
    for i, said in x.said.items():
        if said.kind == "notification" and x.events[i].proc == listen.proc and i > listen.index \
                and said.message.get("method") == "notifications/cancelled":
            params = said.message.get("params") if isinstance(said.message.get("params"), dict) else {}
            if same_id_value(params.get("requestId"), listen.sent.id):
                return True
    return False


def _shut_down_by_harness(x: Exchange, listen: Pair) -> int | None:
    """The exit event of the listen's process when it ended because the harness closed its stdin."""
    for i in range(listen.index + 1, len(x.events)):
        event = x.events[i]
        if event.proc == listen.proc and event.kind == "exit":
            return i if event.note.startswith("exited after stdin was closed") else None
    return None


@rule("SUB-08", "MUST", "a listen stream ends with a result naming its subscription (type kept), or the "
      "server's notifications/cancelled", scope="transcript")
def sub_08(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for listen in _listens(x):
        want = listen.sent.id
        results = [(i, said) for i, said in x.answers(listen) if said.kind == "result"]
        for i, said in results:
            result = said.result if isinstance(said.result, dict) else {}
            meta = result.get("_meta") if isinstance(result.get("_meta"), dict) else {}
            got = meta.get(wire.META_SUBSCRIPTION_ID, _NONE)
            if got is not _NONE and not same_id_value(got, want):
                out.append(Violation("SUB-08", "MUST", "a listen stream ended with a result naming another subscription",
                                     f"_meta.subscriptionId {describe(got)}, the listen request's id is {describe(want)}",
                                     LISTEN, i))
        if results or listen.responses or x.transport.pairs_by_request or _cancel_index(x, listen) is not None:
            continue
        ended = _shut_down_by_harness(x, listen)
        if ended is not None and not _cancelled_by_server(x, listen):
            out.append(Violation("SUB-08", "HEURISTIC", "a listen stream ended with the server and no signal",
                                 "stdin was closed with the listen open; no SubscriptionsListenResult and no "
                                 "notifications/cancelled for it came before the exit", LISTEN, ended))
    return out

"""DIGEST §12 and §13: the notifications a server sends for one request, progress and logs.

The digest states these duties in prose without row ids; they are filed here as
PROG-01..03 (§12) and LOG-01..03 (§13):

PROG-01  MUST   a `notifications/progress` only for a request that sent a `progressToken`, and
                with that token ("notifications may only reference tokens of active,
                in-progress requests"). A client that did not opt in has nothing to match it to.
PROG-02  MUST   `progress` strictly increases from one notification to the next, "even when
                `total` is unknown": a client drawing a bar cannot go backwards.
PROG-03  MUST   progress stops after the response: a late one references a finished request,
                and a client may already have given the token to another request.
LOG-01   MUST NOT  a `notifications/message` for a request without `logLevel` (the schema's own
                words on `RequestMetaObject`): logging is opt-in per request now that
                `logging/setLevel` is gone.
LOG-02   SHOULD  messages only at or above the level the request asked for. The digest says "sent
                only at or above the requested level" without a BCP 14 keyword, so this is filed
                as SHOULD, not MUST.
LOG-03   SHOULD  an invalid `logLevel` gets -32602 (§13's own words). No rule here judges it: the
                `meta-log-level-invalid` probe's expectation does (`Expectation.duty`), and only
                for a frame the server read by 2026-07-28 rules (the 2025 `_meta` takes any key).

Which request a notification belongs to comes from `Exchange.request_scope` (the one pairing
structure): over HTTP the POST whose SSE stream carried it, over stdio the requests in flight on
that process when it was written. Progress is matched to its request by token, as a client
does; a log message has no token, so over stdio it may belong to any request in flight, and is
judged only when none of them (LOG-01) or all of them (LOG-02) break the rule. Legacy-era
requests are left out: a 2025 server has a session-wide `logging/setLevel`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from mcp_tempest.fuzz.oracle.exchange import Exchange, Pair, dual_era_excuses
from mcp_tempest.fuzz.oracle.facts import describe, same_id_value
from mcp_tempest.fuzz.oracle.model import Violation, rule
from mcp_tempest.targets import wire

PROGRESS: Final = "notifications/progress"
MESSAGE: Final = "notifications/message"
PROGRESS_TOKEN: Final = "progressToken"
# RFC 5424 severities in increasing order (schema.json LoggingLevel).
LOG_LEVELS: Final[tuple[str, ...]] = ("debug", "info", "notice", "warning", "error", "critical", "alert",
                                      "emergency")
_RANK: Final = {name: i for i, name in enumerate(LOG_LEVELS)}
_ABSENT: Final = object()


def progress_token(pair: Pair) -> Any:
    """The request's `_meta.progressToken` when it is a ProgressToken (string or integer), else None."""
    token = (pair.sent.meta or {}).get(PROGRESS_TOKEN)
    return token if isinstance(token, str) or (isinstance(token, int) and not isinstance(token, bool)) else None


def log_level(pair: Pair) -> Any:
    """The request's `_meta` logLevel: absent (`_ABSENT`), or the value it sent (maybe not a level)."""
    return (pair.sent.meta or {}).get(wire.META_LOG_LEVEL, _ABSENT)


def _notifications(x: Exchange, method: str) -> Iterator[tuple[int, dict[str, Any]]]:
    for i, said in x.said.items():
        if said.kind == "notification" and said.message.get("method") == method:
            params = said.message.get("params")
            if isinstance(params, dict):  # a params-less one is a schema defect (RT-06's), not ours
                yield i, params


def _judged(x: Exchange, pair: Pair) -> bool:
    return not pair.sent.legacy and dual_era_excuses(x, pair) is None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _progress_events(x: Exchange) -> list[tuple[int, Any, Any, Pair | None, str]]:
    """Every progress notification with its token, value, the request it belongs to and how:
    "active" (in flight), "after" (that request had been answered), "unknown" (no request)."""
    memo = x.memo.get("progress_events")
    if memo is not None:
        return memo  # type: ignore[no-any-return]
    out: list[tuple[int, Any, Any, Pair | None, str]] = []
    for i, params in _notifications(x, PROGRESS):
        token, value = params.get(PROGRESS_TOKEN), params.get("progress")
        scope = x.request_scope(i)
        if x.transport.pairs_by_request:
            if not scope:
                continue  # not on a request's stream: nothing to attribute it to
            pair = scope[0]
            mine = progress_token(pair)
            if mine is None or not same_id_value(mine, token):
                out.append((i, token, value, pair, "unknown"))
            else:
                answered = any(r < i for r in pair.responses)
                out.append((i, token, value, pair, "after" if answered else "active"))
            continue
        active = [p for p in scope if same_id_value(progress_token(p), token)]
        if active:
            out.append((i, token, value, active[0], "active"))
            continue
        event = x.events[i]
        earlier = [p for p in x.pairs if p.index < i and p.proc == event.proc and p.sent.kind == "request"
                   and same_id_value(progress_token(p), token)]
        if earlier:
            out.append((i, token, value, earlier[-1], "after"))
        elif scope or event.proc not in x.reused_procs:
            # No request of this process sent that token. On a reused process with nothing in
            # flight it may belong to an earlier example: that is left alone (not attributable).
            out.append((i, token, value, scope[0] if len(scope) == 1 else None, "unknown"))
    x.memo["progress_events"] = out
    return out


@rule("PROG-01", "MUST", "notifications/progress only for a request that sent that progressToken",
      scope="transcript")
def prog_01(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for i, token, _value, pair, how in _progress_events(x):
        if how != "unknown" or (pair is not None and not _judged(x, pair)):
            continue
        if pair is not None and progress_token(pair) is None:
            detail = f"progressToken {describe(token)}, but the request sent no progressToken"
        elif pair is not None:
            detail = f"progressToken {describe(token)}, but the request sent {describe(progress_token(pair))}"
        else:
            detail = f"progressToken {describe(token)}, which no request on this process sent"
        out.append(Violation("PROG-01", "MUST", "progress for a token no request in flight sent", detail,
                             pair.method if pair is not None else None, i))
    return out


@rule("PROG-02", "MUST", "progress strictly increases with each notification for a request", scope="transcript")
def prog_02(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    last: dict[int, tuple[Any, int]] = {}
    for i, _token, value, pair, how in _progress_events(x):
        if how == "unknown" or pair is None or not _number(value) or not _judged(x, pair):
            continue
        before = last.get(pair.index)
        if before is not None and value <= before[0]:
            out.append(Violation("PROG-02", "MUST", "progress did not increase",
                                 f"progress {describe(value)} after {describe(before[0])} (event {before[1]}) "
                                 "for the same request", pair.method, i))
        last[pair.index] = (value, i)
    return out


@rule("PROG-03", "MUST", "no progress notification after the response to its request", scope="transcript")
def prog_03(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for i, token, _value, pair, how in _progress_events(x):
        if how != "after" or pair is None or not _judged(x, pair):
            continue
        answered = min(r for r in pair.responses if r < i)
        out.append(Violation("PROG-03", "MUST", "progress after the response",
                             f"progressToken {describe(token)}; the request was answered at event {answered}",
                             pair.method, i))
    return out


def _log_events(x: Exchange) -> Iterator[tuple[int, Any, list[Pair]]]:
    """Every log message with its level and the judged requests it may belong to (never empty)."""
    for i, params in _notifications(x, MESSAGE):
        scope = x.request_scope(i)
        if x.transport.pairs_by_request:
            scope = [p for p in scope if not any(r < i for r in p.responses)]  # after it: not a log of it
        if not scope or not all(_judged(x, p) for p in scope):
            continue
        yield i, params.get("level"), scope


@rule("LOG-01", "MUST", "no notifications/message for a request without logLevel", scope="transcript")
def log_01(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for i, level, scope in _log_events(x):
        if all(log_level(p) is _ABSENT for p in scope):
            what = scope[0].method if len(scope) == 1 else f"{len(scope)} requests in flight"
            out.append(Violation("LOG-01", "MUST", "a log message for a request that set no logLevel",
                                 f"level {describe(level)} for {what}; logging is opt-in per request (§13)",
                                 scope[0].method, i))
    return out


@rule("LOG-02", "SHOULD", "notifications/message only at or above the requested logLevel", scope="transcript")
def log_02(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for i, level, scope in _log_events(x):
        asked = [log_level(p) for p in scope]
        if level not in _RANK or any(a not in _RANK for a in asked):
            continue  # an unknown level on either side: the schema rules and -32602 speak to it
        lowest = min(asked, key=_RANK.__getitem__)
        if _RANK[level] < _RANK[lowest]:
            out.append(Violation("LOG-02", "SHOULD", "a log message below the requested logLevel",
                                 f"level {level!r}, the request asked for {lowest!r} and above",
                                 scope[0].method, i))
    return out

"""Running the rules: `judge` for a whole transcript, `judge_response` for one pair (Locust)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

import mcp_tempest.fuzz.oracle.cancellation  # noqa: F401  (registers CAN-04, CAN-06)
import mcp_tempest.fuzz.oracle.http_methods  # noqa: F401  (registers SL-11)
import mcp_tempest.fuzz.oracle.request_notifications  # noqa: F401  (registers PROG-01..03, LOG-01..02)
import mcp_tempest.fuzz.oracle.subscriptions  # noqa: F401  (registers SUB-02..05)
import mcp_tempest.fuzz.oracle.tool_rules  # noqa: F401  (registers TOOL-03, TOOL-06, TOOL-09, TOOL-10, TOOL-12, TOOL-15)
from mcp_tempest.fuzz.oracle import errors, expect, framing, http, meta, mrtr, primitives, results, stdio  # noqa: F401  (registers rules)
from mcp_tempest.fuzz.oracle.auth import refused_by_auth  # (registers AUTH-01..13)
from mcp_tempest.fuzz.oracle.exchange import Exchange, build_exchange, dual_era_excuses
from mcp_tempest.fuzz.oracle.model import RULES, Era, Expectation, Rule, Violation
from mcp_tempest.fuzz.oracle.stateless import OWN_ERA_POLICY  # (registers SL-2)
from mcp_tempest.targets.transcript import Event, Transcript

ERAS: tuple[Era, ...] = ("modern", "legacy")


class OracleUsageError(ValueError):
    """A caller asked for something the oracle does not have (an unknown era or rule id)."""


@lru_cache(maxsize=8)
def rules_for(era: Era, scope: str | None = None) -> tuple[Rule, ...]:
    """The rules that hold in `era` (and of `scope`, when given), in registration order."""
    if era not in ERAS:
        raise OracleUsageError(f"unknown era {era!r}; expected one of {', '.join(ERAS)}")
    return tuple(r for r in RULES.values() if era in r.eras and (scope is None or r.scope == scope))


def _select(era: Era, wanted: Iterable[str] | None) -> tuple[Rule, ...]:
    applicable = rules_for(era)
    if wanted is None:
        return applicable
    wanted = list(wanted)
    unknown = [w for w in wanted if w not in RULES]
    if unknown:
        raise OracleUsageError(f"unknown rule id(s): {', '.join(unknown)}")
    chosen = set(wanted)
    return tuple(r for r in applicable if r.id in chosen)


def _finish(found: list[Violation]) -> list[Violation]:
    unique = list(dict.fromkeys(found))
    unique.sort(key=lambda v: (v.event_index if v.event_index is not None else -1, v.rule))
    return unique


def judge(
    transcript: Transcript,
    *,
    era: Era = "modern",
    expectations: Mapping[int, Expectation] | None = None,
    rules: Iterable[str] | None = None,
    discover: Mapping[str, Any] | None = None,
    dual: bool = False,
) -> list[Violation]:
    """Every violation in `transcript` of the rules that hold in `era`.

    `expectations` maps a send event's index to what the caller knows the server must do with
    that frame (see `Expectation`); `rules` restricts the run to some rule ids; `discover` is
    the server's DiscoverResult when the caller has it (the probe's), which sharpens the rules
    that depend on advertised capabilities and versions (META-04, META-06, DISC-07/08). A
    legacy-era run never reports a modern-only rule. `dual`: the target serves both eras; frames
    outside the modern protocol are then judged by the dual-era policy (`dual_era_excuses`).
    """
    selected = _select(era, rules)
    x = build_exchange(transcript, era=era, expectations=expectations, discover=discover, dual=dual)
    found: list[Violation] = []
    for r in selected:
        found.extend(r.check(x))
    if dual:
        found = [v for v in found if not _excused_by_era(x, v)]
    return _finish([v for v in found if not _excused_by_auth(x, v)])


def _excused_by_auth(x: Exchange, v: Violation) -> bool:
    """Whether a non-AUTH violation sits on a request its token case had refused (a 401 body is
    the authorization layer's answer, which no MCP rule judges)."""
    if v.rule.startswith("AUTH-") or v.event_index is None:
        return False
    i = v.event_index
    send = i if i in x.pair_at else x.answer_of.get(i, x.events[i].ref if i < len(x.events) else None)
    return send is not None and refused_by_auth(x, send)


def _excused_by_era(x: Exchange, v: Violation) -> bool:
    """Whether a modern-only rule's violation sits on a frame the dual-era policy lets the server
    read by 2025-era rules (rules that hold in both eras judge such frames as they are). A probe
    frame's expectation judged on that frame is its reaction (see `dual_era_excuses`)."""
    rule = RULES.get(v.rule)
    if rule is None or "legacy" in rule.eras or v.event_index is None or v.rule in OWN_ERA_POLICY:
        return False
    i = v.event_index
    send = i if i in x.pair_at else x.answer_of.get(i, x.events[i].ref if i < len(x.events) else None)
    pair = x.pair_at.get(send) if send is not None else None
    reaction = v.probe is not None and pair is not None and pair.index in x.expectations
    return pair is not None and dual_era_excuses(x, pair, reaction=reaction) is not None


def judge_response(
    request: Any,
    response: Any,
    *,
    http_status: int | None = None,
    headers: Mapping[str, str] | None = None,
    request_headers: Mapping[str, str] | None = None,
    raw: bytes | None = None,
    era: Era = "modern",
    discover: Mapping[str, Any] | None = None,
    rules: Iterable[str] | None = None,
) -> list[Violation]:
    """Judge one request and its one response without a transcript: the Locust fast path.

    Runs only the pair-scoped rules (or those of them named in `rules`). HTTP is assumed when
    a status or response headers are given. `response=None` means the body carried no JSON-RPC
    message (a 202, an empty 4xx). Header rules (HDR-01..03) need `request_headers`; without
    them they stay silent. Cost: ~0.5 ms, plus ~1-2 ms when RT-06 validates a result schema
    (leave "RT-06" out of `rules` to skip it on hot paths).
    """
    transport = "http" if http_status is not None or headers is not None else "stdio"
    resp_headers = dict(headers) if headers is not None else None
    sent = Event("send", 0.0, message=request, headers=dict(request_headers) if request_headers else None)
    if response is None:
        answer = Event("http", 0.0, status=http_status, headers=resp_headers, raw=raw or b"", ref=0)
    else:
        answer = Event("recv", 0.0, message=response, raw=raw, status=http_status, headers=resp_headers, ref=0)
    transcript = Transcript("judge_response", transport, [sent, answer])
    x = build_exchange(transcript, era=era, discover=discover)
    selected = rules_for(era, "pair")
    if rules is not None:
        chosen = {r.id for r in _select(era, rules)}
        selected = tuple(r for r in selected if r.id in chosen)
    found: list[Violation] = []
    for r in selected:
        found.extend(r.check(x))
    return _finish(found)

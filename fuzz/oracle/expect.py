"""Caller-supplied expectations: the reaction to a (malformed) frame, and survival after it.

The strategies know what each mutation breaks and what the spec demands in return; the oracle
checks the server's reaction against that, then checks the liveness sentinel: the next
well-formed request on the same process must still be answered properly. A server that dies or
desynchronises after bad input is reported under the rule the bad frame probed, as HEURISTIC
(a robustness judgement; the MUST rules that a wrong reply breaks report themselves).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mcp_tempest.fuzz.oracle.exchange import Exchange, Pair, build_exchange, dual_era_excuses
from mcp_tempest.fuzz.oracle.facts import describe, frame_class
from mcp_tempest.fuzz.oracle.framing import in_flight_groups
from mcp_tempest.fuzz.oracle.http import header_defects
from mcp_tempest.fuzz.oracle.meta import defect_codes
from mcp_tempest.fuzz.oracle.model import BOTH_ERAS, Expectation, Strength, Violation, rule, server_duty
from mcp_tempest.fuzz.oracle.mrtr import state_was_needed
from mcp_tempest.targets import wire

_DESYNC_CODES = frozenset({wire.PARSE_ERROR, wire.INVALID_REQUEST})


def _expectations(x: Exchange) -> Iterator[tuple[Pair, Expectation]]:
    for index in sorted(x.expectations):
        exp = x.expectations[index]
        pair = x.pair_at.get(index)
        if pair is not None and x.era in exp.eras:
            yield pair, exp


def _violation(exp: Expectation, strength: Strength, title: str, detail: str, method: str | None,
               at: int | None, pair: Pair, reaction: str = "") -> Violation:
    """A wrong reaction to a probe frame: filed under the server's duty, the probe named apart,
    and the reaction worded for the class of frame rather than the mutation (see `frame_class`)."""
    return Violation(exp.duty or server_duty(exp.rule), strength, title, detail, method, at,
                     probe=exp.mutation, probe_rule=exp.rule,
                     reaction=reaction or title.replace(_label(exp), frame_class(pair.sent)))


def _why_kind(why: str) -> str:
    """A liveness failure's account without its figures (exit status, timeout): how the process
    failed, which is what two probes meeting the same bug share."""
    while True:  # innermost first, so nested parentheses go whole
        shorter = re.sub(r"\s*\([^()]*\)", "", why)
        if shorter == why:
            return why
        why = shorter


def _label(exp: Expectation) -> str:
    return f"malformed frame ({exp.mutation})" if exp.mutation else "probe frame"


def _answered_later(x: Exchange, pair: Pair) -> bool:
    """Evidence that silence is final on stdio: the process answered something sent after this
    frame, or ended; without it a late reply might simply not be in the transcript yet."""
    for later in x.pairs:
        if later.index > pair.index and later.proc == pair.proc and later.responses:
            return True
    return any(
        e.kind in ("closed", "exit") and e.proc == pair.proc for e in x.events[pair.index + 1 :]
    )


def _statuses(x: Exchange, pair: Pair) -> list[tuple[int, int]]:
    out = []
    for i in (*pair.responses, *pair.stream, *pair.http):
        status = x.events[i].status
        if status is not None:
            out.append((i, status))
    return out[:1]


@dataclass(frozen=True, slots=True)
class _Allows:
    error: bool
    silence: bool
    complete: bool
    input_required: bool
    check_codes: bool = True
    is_error_result: bool = False  # a result with isError: true counts as a refusal


_ALLOWS: dict[str, _Allows] = {
    "error": _Allows(error=True, silence=False, complete=False, input_required=False),
    "error-or-refusal": _Allows(error=True, silence=False, complete=False, input_required=False),
    "error-or-ignore": _Allows(error=True, silence=True, complete=False, input_required=False),
    "no-reply": _Allows(error=False, silence=True, complete=False, input_required=False),
    "error-or-input-required": _Allows(error=True, silence=False, complete=False, input_required=True),
    # "as valid" may be any error the unmutated frame itself draws (an unknown tool, say): codes unjudged
    "error-or-as-valid": _Allows(error=True, silence=False, complete=True, input_required=True, check_codes=False),
    "as-valid": _Allows(error=True, silence=False, complete=True, input_required=True, check_codes=False),
    "any": _Allows(error=True, silence=True, complete=True, input_required=True, check_codes=False),
    # a server->client frame sent to a server: the client's duty; the server is judged on survival
    "client-rejects": _Allows(error=True, silence=True, complete=True, input_required=True, check_codes=False),
    "not-complete": _Allows(error=True, silence=True, complete=False, input_required=True),
    "result": _Allows(error=False, silence=False, complete=True, input_required=True),
    "rejected": _Allows(error=True, silence=False, complete=False, input_required=True, is_error_result=True),
}


def _reaction(x: Exchange, pair: Pair, exp: Expectation) -> list[Violation]:
    allows = _ALLOWS.get(exp.kind)
    if allows is None:
        return [_violation(exp, "HEURISTIC", f"unknown expectation kind {exp.kind!r}", "", pair.method, pair.index,
                           pair)]
    answers = list(x.answers(pair))
    label, strength, method = _label(exp), exp.strength, pair.method
    out: list[Violation] = []

    def bad(title: str, detail: str, at: int, how_strong: str | None = None) -> None:
        out.append(_violation(exp, how_strong or strength, title, detail, method, at, pair))  # type: ignore[arg-type]

    for i, said in answers:
        status = x.events[i].status
        if said.kind == "error":
            if exp.kind == "no-reply":
                if x.transport.http_semantics and said.id_absent_or_null and status is not None and status >= 400:
                    continue  # HTTP-05: a rejected notification may carry an id-less error body
                bad(f"{label} was answered", f"reply: {describe(said.message, 120)}", i)
            elif not allows.error:
                bad(f"{label} answered with error {said.code}", f"expected {exp.kind}", i)
            elif allows.check_codes and exp.codes and said.code not in exp.codes \
                    and said.code not in defect_codes(x, pair):
                bad(f"{label} answered with error {said.code}", f"expected one of {sorted(exp.codes)}", i)
        elif said.kind == "result":
            result = said.result if isinstance(said.result, dict) else {}
            input_required = result.get("resultType") == "input_required"
            if input_required and allows.input_required:
                continue
            if not input_required and (allows.complete or (allows.is_error_result and result.get("isError") is True)):
                continue
            if exp.rule == "MRTR-10" and not input_required and not state_was_needed(x, pair):
                continue  # the retry carried every answer the server asked for: no state was needed (MRTR-16)
            what = "a fresh input_required" if input_required else "a result"
            bad(f"{label} was served ({what})", f"expected {exp.kind}", i, exp.served_strength)
    if not answers and not pair.maybe_answered and not allows.silence and _silent(x, pair) \
            and not _refused_by_status(x, pair, exp):
        died = x.died_unasked(pair.proc, pair.index) if x.transport.line_framed else None
        if died is not None and strength != "MUST":
            pass  # no answer withheld: the process ended, which liveness reports (a robustness call)
        else:
            bad(f"{label} got no reply", f"expected {exp.kind}"
                + (f" {sorted(exp.codes)}" if exp.codes and allows.check_codes else ""), pair.index)
    if x.transport.http_semantics:
        out.extend(_http_reaction(x, pair, exp, allows, answers))
    return out


def _refused_by_status(x: Exchange, pair: Pair, exp: Expectation) -> bool:
    """Over HTTP a 4xx without a JSON-RPC body refuses the frame as clearly as an error would
    (DIGEST 7.5 leaves the body of such refusals open): for "error-or-refusal", and for
    "error-or-as-valid" when the caller named that status (a 413 for a huge frame)."""
    if not x.transport.http_semantics:
        return False
    if exp.kind == "error-or-refusal":
        allowed = exp.default_statuses()
    elif exp.kind == "error-or-as-valid":
        allowed = exp.statuses
    else:
        return False
    return any(status in allowed and 400 <= status < 500 for _, status in _statuses(x, pair))


def _silent(x: Exchange, pair: Pair) -> bool:
    """Whether the lack of any reply is established (HTTP: the response held none; stdio: see _answered_later)."""
    if x.transport.http_semantics:
        return any(x.events[i].kind == "http" for i in pair.http)
    return _answered_later(x, pair)


def _http_reaction(x: Exchange, pair: Pair, exp: Expectation, allows: _Allows,
                   answers: list[tuple[int, Any]]) -> list[Violation]:
    out: list[Violation] = []
    label, method = _label(exp), pair.method
    allowed = exp.default_statuses()
    success = any(s.kind == "result" for _, s in answers)
    # DIGEST 2: with several defects any listed error matching one of them stands, with the
    # status that error is listed with (-32601 is 404, HDR-05); the probed status is not owed.
    other = defect_codes(x, pair) - set(exp.codes)
    if allowed and any(s.kind == "error" and s.code in other for _, s in answers):
        # (only widens a status check the expectation makes: one that judges no status, as a GET
        # or DELETE on the endpoint's does, gains none from the error body a server adds)
        allowed = allowed | {404 if any(s.code == wire.METHOD_NOT_FOUND for _, s in answers) else 400}
    for i, status in _statuses(x, pair):
        if status >= 500 and status not in exp.statuses:
            out.append(_violation(exp, "HEURISTIC", f"HTTP {status} for a {label}",
                                  "bad input should be refused, not crash the handler", method, i, pair))
        elif allowed and status not in allowed and not (success and 200 <= status < 300
                                                        and (allows.complete or allows.input_required)):
            # A status the caller named is held at its strength; the 4xx default is only typical
            # (DIGEST 7.5 leaves most framing errors' status UNSPEC), so a miss there is a heuristic.
            strength = exp.strength if exp.statuses else "HEURISTIC"
            out.append(_violation(exp, strength, f"{label} answered with HTTP {status}",
                                  f"expected one of {sorted(allowed) if len(allowed) < 20 else '4xx'}", method, i,
                                  pair))
    if exp.forbid_headers:
        for i in (*pair.responses, *pair.stream, *pair.http):
            headers = x.events[i].headers or {}
            present = sorted(h for h in headers if h.lower() in exp.forbid_headers)
            if present:
                out.append(_violation(exp, exp.strength, f"{label} answered with header {present[0]}",
                                      "this header must not come back", method, i, pair))
                break
    return out


@rule("EXPECT-REACTION", "MUST", "the reaction to a probe frame is the one its expectation names "
      "(violations carry the server's duty as rule, the probed rule as probe_rule)", eras=BOTH_ERAS, scope="transcript")
def expect_reaction(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for pair, exp in _expectations(x):
        if dual_era_excuses(x, pair, reaction=True) is None:
            out.extend(_reaction(x, pair, exp))
    return out


def _is_sentinel(x: Exchange, pair: Pair) -> bool:
    sent = pair.sent
    if pair.index in x.expectations or sent.kind != "request" or not sent.envelope_ok or not sent.id_readable:
        return False
    if pair.index in _reused_ids(x):
        return False  # it shares an id in flight: refusing it is a fair answer, not a sign of death
    if x.era == "modern" and not (sent.well_formed_request and sent.modern):
        return False
    return not header_defects(pair)


def _reused_ids(x: Exchange) -> frozenset[int]:
    """Send indices of requests sent while an earlier one with the same id was still in flight."""
    found = x.memo.get("reused_ids")
    if found is None:
        found = frozenset(p.index for group in in_flight_groups(x) for p in group[1:])
        x.memo["reused_ids"] = found
    return found


def _sentinel_failure(x: Exchange, sentinel: Pair) -> str | None:
    answers = list(x.answers(sentinel))
    if answers:
        # A legacy server may refuse a request for its own reasons (-32600 before initialize, say);
        # only a parse error for a valid line is a sure sign of desynchronised framing there.
        desync = _DESYNC_CODES if x.era == "modern" else frozenset({wire.PARSE_ERROR})
        for _, said in answers:
            if said.kind == "result":
                return None
            if said.code in desync:
                return f"the valid request after it was rejected with {said.code} (framing desynchronised?)"
            if x.era == "modern" and sentinel.method == "server/discover":
                return f"server/discover after it failed with {said.code}"
        return None
    if x.transport.http_semantics:
        for i in sentinel.http:
            event = x.events[i]
            if event.kind in ("timeout", "error"):
                return f"the next request failed: {event.note or event.kind}"
        return None
    died = x.died_unasked(sentinel.proc, sentinel.index)
    if died is not None:
        return f"the server exited (status {died.status}) and never answered the next request"
    for event in x.events[sentinel.index + 1 :]:
        if event.proc != sentinel.proc:
            continue
        if event.kind == "closed":
            return "the server closed its output and never answered the next request"
        if event.kind == "timeout" and event.ref == sentinel.index:
            return f"the next request was not answered ({event.note or 'timeout'})"
        if event.kind == "error" and "broken pipe" in event.note:
            return f"the next request could not be delivered ({event.note})"
    return None


@rule("EXPECT-LIVENESS", "HEURISTIC", "after a probe frame the server still answers the next valid request "
      "(violations carry the server's duty as rule, the probed rule as probe_rule)", eras=BOTH_ERAS, scope="transcript")
def expect_liveness(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    window: dict[int, list[tuple[Pair, Expectation]]] = {}  # sentinel index -> probes before it
    for pair, exp in _expectations(x):
        if not exp.sentinel:
            continue
        sentinel = next(
            (p for p in x.pairs if p.index > pair.index and p.proc == pair.proc and _is_sentinel(x, p)), None
        )
        if sentinel is None:
            why = _death_without_sentinel(x, pair)
            if why:
                out.append(_violation(exp, "HEURISTIC", f"server did not survive a {_label(exp)}", why,
                                      pair.method, pair.index, pair,
                                      f"after a {frame_class(pair.sent)}: {_why_kind(why)}"))
            continue
        window.setdefault(sentinel.index, []).append((pair, exp))
    for sentinel_index, probes in window.items():
        sentinel = x.pair_at[sentinel_index]
        why = _sentinel_failure(x, sentinel)
        if why is None:
            continue
        if dual_era_excuses(x, sentinel) is not None and any(s.kind == "error" for _, s in x.answers(sentinel)):
            # A dual-era server that took an earlier frame of the process as 2025-era (one without a
            # protocolVersion, say) answers server/discover as the unknown method it is there: an
            # answer by that era's rules, not a server that did not survive (VER-05).
            continue
        # The culprit: the first probe after the last one that was still answered.
        answered = [k for k, (p, _) in enumerate(probes) if p.responses or p.maybe_answered]
        pair, exp = probes[answered[-1] + 1] if answered and answered[-1] + 1 < len(probes) else probes[0]
        out.append(_violation(exp, "HEURISTIC", f"server did not survive a {_label(exp)}", why,
                              pair.method, sentinel_index, pair, f"after a {frame_class(pair.sent)}: {_why_kind(why)}"))
    return out


def _death_without_sentinel(x: Exchange, pair: Pair) -> str | None:
    """No valid request followed the probe; an exit on its own before any other frame still tells."""
    died = x.died_unasked(pair.proc, pair.index)
    if died is None:
        return None
    end = next((j for j, e in enumerate(x.events) if e is died), len(x.events))
    for j in range(pair.index + 1, end):
        if x.events[j].kind == "send" and x.events[j].proc == pair.proc and j not in x.expectations:
            return None  # something else was sent first: the death is not clearly this probe's
    return f"the server exited by itself (status {died.status})"


def reply_still_owed(transcript: Any, expectations: dict[int, Expectation]) -> bool:
    """Whether a probe frame whose expectation does not allow silence has no reply yet. A server
    that serves frames concurrently may answer the sentinel before a slower probe frame, so the
    executor reads on a little before it calls such a frame unanswered (then the oracle judges)."""
    x = build_exchange(transcript, expectations=expectations)
    for index, exp in expectations.items():
        pair = x.pair_at.get(index)
        allows = _ALLOWS.get(exp.kind)
        if pair is not None and allows is not None and not allows.silence and not pair.responses \
                and not pair.maybe_answered:
            return True
    return False

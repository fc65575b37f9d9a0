"""Caller-supplied expectations: the reaction to a (malformed) frame, and survival after it.

The strategies know what each mutation breaks and what the spec demands in return; the oracle
checks the server's reaction against that, then checks the liveness sentinel: the next
well-formed request on the same process must still be answered properly. A server that dies or
desynchronises after bad input is reported under the rule the bad frame probed, as HEURISTIC
(a robustness judgement; the MUST rules that a wrong reply breaks report themselves).
"""

from __future__ import annotations

from collections.abc import Iterator

from fuzz.oracle.exchange import Exchange, Pair
from fuzz.oracle.facts import describe
from fuzz.oracle.http import header_defects
from fuzz.oracle.model import BOTH_ERAS, Expectation, Violation, rule
from targets import wire

_DESYNC_CODES = frozenset({wire.PARSE_ERROR, wire.INVALID_REQUEST})


def _expectations(x: Exchange) -> Iterator[tuple[Pair, Expectation]]:
    for index in sorted(x.expectations):
        exp = x.expectations[index]
        pair = x.pair_at.get(index)
        if pair is not None and x.era in exp.eras:
            yield pair, exp


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


def _reaction(x: Exchange, pair: Pair, exp: Expectation) -> list[Violation]:
    answers = list(x.answers(pair))
    results = [(i, s) for i, s in answers if s.kind == "result"]
    errors = [(i, s) for i, s in answers if s.kind == "error"]
    statuses = _statuses(x, pair)
    label, rid, strength, method = _label(exp), exp.rule, exp.strength, pair.method
    out: list[Violation] = []

    def bad(title: str, detail: str, at: int) -> None:
        out.append(Violation(rid, strength, title, detail, method, at))

    if x.transport == "http":
        for i, status in statuses:
            if status >= 500 and status not in exp.statuses:
                out.append(Violation(rid, "HEURISTIC", f"HTTP {status} for a {label}",
                                     "bad input should be refused, not crash the handler", method, i))
    if exp.kind == "error":
        if results:
            bad(f"{label} was served", f"expected an error {sorted(exp.codes) or ''}".rstrip(), results[0][0])
        for i, said in errors:
            if exp.codes and said.code not in exp.codes:
                bad(f"{label} answered with error {said.code}", f"expected one of {sorted(exp.codes)}", i)
        if x.transport == "http" and exp.statuses:
            for i, status in statuses:
                if status not in exp.statuses:
                    bad(f"{label} answered with HTTP {status}", f"expected one of {sorted(exp.statuses)}", i)
        if not answers:
            if x.transport == "http":
                if exp.codes and statuses:
                    bad(f"{label} got no JSON-RPC error", f"expected one of {sorted(exp.codes)} in the body",
                        statuses[0][0])
            elif _answered_later(x, pair):
                bad(f"{label} got no error reply", f"expected {sorted(exp.codes) or 'an error'}", pair.index)
    elif exp.kind == "no-reply":
        for i, said in answers:
            status = x.events[i].status
            if x.transport == "http" and said.kind == "error" and said.id_absent_or_null \
                    and status is not None and status >= 400:
                continue  # HTTP-05: a rejected notification may carry an id-less error body
            bad(f"{label} was answered", f"reply: {describe(said.message, 120)}", i)
        if x.transport == "http":
            for i, status in statuses:
                allowed = status in exp.statuses if exp.statuses else (status == 202 or 400 <= status < 500)
                if not allowed:
                    bad(f"{label} answered with HTTP {status}",
                        f"expected {sorted(exp.statuses) if exp.statuses else '202 or 4xx'}", i)
    elif exp.kind == "not-complete":
        for i, said in results:
            if isinstance(said.result, dict) and said.result.get("resultType", "complete") == "complete":
                bad(f"{label} produced a complete result", "expected an error or a fresh input_required", i)
    elif exp.kind == "result":
        if errors and not results:
            i, said = errors[0]
            bad(f"request answered with error {said.code}", "expected a result", i)
        elif not answers and (x.transport == "http" or _answered_later(x, pair)):
            bad("request got no answer", "expected a result", pair.index)
    return out


@rule("EXPECT-REACTION", "MUST", "the reaction to a probe frame is the one its expectation names "
      "(violations carry the probed rule's id)", eras=BOTH_ERAS, scope="transcript")
def expect_reaction(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for pair, exp in _expectations(x):
        out.extend(_reaction(x, pair, exp))
    return out


def _is_sentinel(x: Exchange, pair: Pair) -> bool:
    sent = pair.sent
    if pair.index in x.expectations or sent.kind != "request" or not sent.envelope_ok or not sent.id_readable:
        return False
    if x.era == "modern" and not (sent.well_formed_request and sent.modern):
        return False
    return not header_defects(pair)


def _sentinel_failure(x: Exchange, sentinel: Pair) -> str | None:
    answers = list(x.answers(sentinel))
    if answers:
        for _, said in answers:
            if said.kind == "result":
                return None
            if said.code in _DESYNC_CODES:
                return f"the valid request after it was rejected with {said.code} (framing desynchronised?)"
            if sentinel.method != "server/discover":
                return None
            return f"server/discover after it failed with {said.code}"
        return None
    if x.transport == "http":
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
        if event.kind == "timeout" and event.note.endswith(f"id {sentinel.sent.id!r}"):
            return f"the next request was not answered ({event.note})"
        if event.kind == "error" and "broken pipe" in event.note:
            return f"the next request could not be delivered ({event.note})"
    return None


@rule("EXPECT-LIVENESS", "HEURISTIC", "after a probe frame the server still answers the next valid request "
      "(violations carry the probed rule's id)", eras=BOTH_ERAS, scope="transcript")
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
                out.append(Violation(exp.rule, "HEURISTIC", f"server did not survive a {_label(exp)}", why,
                                     pair.method, pair.index))
            continue
        window.setdefault(sentinel.index, []).append((pair, exp))
    for sentinel_index, probes in window.items():
        why = _sentinel_failure(x, x.pair_at[sentinel_index])
        if why is None:
            continue
        # The culprit: the first probe after the last one that was still answered.
        answered = [k for k, (p, _) in enumerate(probes) if p.responses]
        pair, exp = probes[answered[-1] + 1] if answered and answered[-1] + 1 < len(probes) else probes[0]
        out.append(Violation(exp.rule, "HEURISTIC", f"server did not survive a {_label(exp)}", why,
                             pair.method, sentinel_index))
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

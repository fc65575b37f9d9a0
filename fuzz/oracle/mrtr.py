"""DIGEST section 8: Multi Round-Trip Requests (MRTR-*).

Capabilities are always those of the request that drew the InputRequiredResult: a server must
not rely on anything an earlier request declared (META-02/03), so neither may the oracle.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from mcp_tempest.fuzz.oracle.exchange import Exchange, Pair
from mcp_tempest.fuzz.oracle.facts import MODERN_METHODS, describe
from mcp_tempest.fuzz.oracle.model import Violation, rule
from mcp_tempest.fuzz.oracle.results import modern_results
from mcp_tempest.fuzz.oracle.schemas import INPUT_REQUEST_TYPES, type_validator
from mcp_tempest.targets import wire

KIND_CAPABILITY = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}


def input_required_results(x: Exchange) -> Iterator[tuple[Pair, int, dict[str, Any]]]:
    for pair, i, _, result in modern_results(x):
        if result.get("resultType") == "input_required":
            yield pair, i, result


def _input_requests(result: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], str]]:
    """(key, input request, method) for each well-shaped entry of inputRequests."""
    requests = result.get("inputRequests")
    if not isinstance(requests, dict):
        return
    for key, request in requests.items():
        if isinstance(request, dict) and isinstance(request.get("method"), str):
            yield key, request, request["method"]


@rule("MRTR-01", "MUST", "only tools/call, resources/read and prompts/get may return input_required")
def mrtr_01(x: Exchange) -> list[Violation]:
    return [
        Violation("MRTR-01", "MUST", f"{pair.method} returned input_required",
                  "only tools/call, resources/read and prompts/get may", pair.method, i)
        for pair, i, _ in input_required_results(x)
        if pair.method in MODERN_METHODS and pair.method not in wire.INPUT_REQUIRED_METHODS
    ]


@rule("MRTR-02", "MUST", "an InputRequiredResult has inputRequests or requestState")
def mrtr_02(x: Exchange) -> list[Violation]:
    return [
        Violation("MRTR-02", "MUST", "input_required without inputRequests and requestState",
                  "the client has nothing to answer and nothing to echo", pair.method, i)
        for pair, i, result in input_required_results(x)
        if "inputRequests" not in result and "requestState" not in result
    ]


class _Obj(dict[str, Any]):
    """A decoded JSON object that remembers which of its keys appeared more than once."""

    duplicates: set[str]


def _pairs_hook(items: list[tuple[str, Any]]) -> _Obj:
    obj = _Obj()
    obj.duplicates = set()
    for key, value in items:
        if key in obj:
            obj.duplicates.add(key)
        obj[key] = value
    return obj


def _duplicate_input_keys(raw: bytes) -> set[str]:
    try:
        doc = json.loads(raw, object_pairs_hook=_pairs_hook)
    except ValueError:
        return set()
    result = doc.get("result") if isinstance(doc, dict) else None
    requests = result.get("inputRequests") if isinstance(result, dict) else None
    return set(requests.duplicates) if isinstance(requests, _Obj) else set()


@rule("MRTR-03", "MUST", "inputRequests keys are unique (checked on the raw JSON)")
def mrtr_03(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for pair, i, _ in input_required_results(x):
        raw = x.events[i].raw
        if raw and b"inputRequests" in raw:
            dups = _duplicate_input_keys(raw)
            if dups:
                out.append(Violation("MRTR-03", "MUST", "duplicate keys in inputRequests",
                                     f"keys {sorted(dups)} appear more than once", pair.method, i))
    return out


@rule("MRTR-04", "MUST", "each inputRequests value is an ElicitRequest, CreateMessageRequest or ListRootsRequest")
def mrtr_04(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for pair, i, result in input_required_results(x):
        requests = result.get("inputRequests")
        if "inputRequests" not in result:
            continue
        if not isinstance(requests, dict):
            out.append(Violation("MRTR-04", "MUST", "inputRequests is not an object",
                                 f"inputRequests is {describe(requests)}", pair.method, i))
            continue
        for key, request in requests.items():
            method = request.get("method") if isinstance(request, dict) else None
            type_name = INPUT_REQUEST_TYPES.get(method) if isinstance(method, str) else None
            if type_name is None:
                out.append(Violation("MRTR-04", "MUST", f"input request {key!r} is not a known kind",
                                     f"method {describe(method)}", pair.method, i))
                continue
            validate = type_validator(type_name)
            errors = validate(request) if validate is not None else []
            if errors:
                shown = "; ".join(f"{e.where()}: {e.message[:100]}" for e in errors[:2])
                out.append(Violation("MRTR-04", "MUST", f"input request {key!r} is not a valid {type_name}",
                                     shown, pair.method, i))
            if "jsonrpc" in request or "id" in request:
                out.append(Violation("MRTR-04", "MUST", f"input request {key!r} is a JSON-RPC envelope",
                                     "input requests are bare {method, params} objects", pair.method, i))
    return out


@rule("MRTR-05", "MUST", "no input request of a kind the request did not declare (elicitation, sampling, roots)")
def mrtr_05(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for pair, i, result in input_required_results(x):
        if not isinstance(pair.sent.caps, dict):
            continue  # META-04 judges a request without capabilities
        declared = pair.sent.capabilities
        for key, _, method in _input_requests(result):
            needed = KIND_CAPABILITY.get(method)
            if needed and needed not in declared:
                out.append(Violation("MRTR-05", "MUST", f"{method} sent to a client without {needed!r}",
                                     f"input request {key!r}; this request declared {sorted(declared)}",
                                     pair.method, i))
    return out


@rule("MRTR-06", "MUST", "elicitation uses only a declared mode (elicitation: {} means form only)")
def mrtr_06(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for pair, i, result in input_required_results(x):
        elicitation = pair.sent.capabilities.get("elicitation")
        if not isinstance(elicitation, dict):
            continue  # undeclared: MRTR-05's finding
        explicit = {m for m in ("form", "url") if m in elicitation}
        modes = explicit or {"form"}
        for key, request, method in _input_requests(result):
            if method != "elicitation/create":
                continue
            params = request.get("params")
            mode = params.get("mode", "form") if isinstance(params, dict) else "form"
            if mode in ("form", "url") and mode not in modes:
                out.append(Violation("MRTR-06", "MUST", f"{mode}-mode elicitation to a client without it",
                                     f"input request {key!r}; elicitation capability {describe(elicitation)}",
                                     pair.method, i))
    return out


@rule("MRTR-07", "MUST", "tool-enabled sampling needs sampling.tools; includeContext needs sampling.context")
def mrtr_07(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for pair, i, result in input_required_results(x):
        sampling = pair.sent.capabilities.get("sampling")
        if not isinstance(sampling, dict):
            continue  # undeclared: MRTR-05's finding
        for key, request, method in _input_requests(result):
            params = request.get("params")
            if method != "sampling/createMessage" or not isinstance(params, dict):
                continue
            if ("tools" in params or "toolChoice" in params) and "tools" not in sampling:
                out.append(Violation("MRTR-07", "MUST", "tool-enabled sampling to a client without sampling.tools",
                                     f"input request {key!r}", pair.method, i))
            if params.get("includeContext") in ("thisServer", "allServers") and "context" not in sampling:
                out.append(Violation("MRTR-07", "SHOULD",
                                     f"includeContext {params['includeContext']!r} without sampling.context",
                                     f"input request {key!r}", pair.method, i))
    return out


# --- MRTR-10 seen from the server: a retry that leaves out its requestState ---

_ROUND_TRIP_KEYS = ("name", "uri")  # what names the call a round-trip continues (tool, resource, prompt)


def _same_call(a: Pair, b: Pair) -> bool:
    pa, pb = a.sent.params or {}, b.sent.params or {}
    return a.method == b.method and all(pa.get(k) == pb.get(k) for k in _ROUND_TRIP_KEYS)


def _input_required_of(x: Exchange, pair: Pair) -> dict[str, Any] | None:
    for _, said in x.answers(pair):
        result = said.result if said.kind == "result" else None
        if isinstance(result, dict) and result.get("resultType") == "input_required":
            return result
    return None


def unanswered_input_requests(x: Exchange, retry: Pair) -> list[str] | None:
    """The keys the server asked for, over every round of the round-trip `retry` continues, that
    the retry's own inputResponses leave unanswered; None when no earlier input_required of the
    same call is in the transcript (nothing the retry continues).

    Why: a retry that leaves out the requestState it was given (the client breaks MRTR-10) tells
    the server nothing but what the retry itself carries. If that holds an answer to every
    question the server asked, a server that derives its work from the answers alone rightly goes
    on (MRTR-16: it proceeds when the answers it needs are there, MRTR-18: the retry is
    self-contained), so serving it says nothing. Only when a question is still unanswered (asked
    in this round, or in an earlier one whose answers only the state carried) did the server
    need the state, and serving the retry anyway is the observation. The rounds are linked the
    way the server links them: each retry echoes the requestState of the answer before it."""
    earlier = [p for p in x.pairs if p.index < retry.index and _same_call(p, retry)]
    latest = next(((p, r) for p in reversed(earlier) if (r := _input_required_of(x, p)) is not None), None)
    if latest is None:
        return None
    responses = (retry.sent.params or {}).get("inputResponses")
    answered = set(responses) if isinstance(responses, dict) else set()
    asked: list[str] = []
    pair, result = latest
    seen: set[int] = set()
    while pair.index not in seen:
        seen.add(pair.index)
        requests = result.get("inputRequests")
        asked.extend(k for k in (requests if isinstance(requests, dict) else {}) if k not in asked)
        state = (pair.sent.params or {}).get("requestState")
        if not isinstance(state, str):
            break  # the first round: nothing came before it
        before = next(((p, r) for p in reversed(earlier) if p.index < pair.index
                       and (r := _input_required_of(x, p)) is not None and r.get("requestState") == state), None)
        if before is None:
            break
        pair, result = before
    return [k for k in asked if k not in answered]


def state_was_needed(x: Exchange, retry: Pair) -> bool:
    """Whether serving `retry`, sent without the requestState it was given, means the server did
    without state it needed (see `unanswered_input_requests`)."""
    return bool(unanswered_input_requests(x, retry))

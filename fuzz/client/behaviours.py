"""Scripted server behaviours drawn by Hypothesis: the `ClientCase` strategy.

Every play is drawn from the message schema through the project's strategies (valid results
from `strategies.frames.valid_result`, input_required rounds from `strategies.mrtr`), then
possibly bent into one of the hostile answers a client must survive or read right (a result
without resultType or with an unknown one, malformed inputRequests, odd requestState, the MCP
errors with and without their data, stray frames around the answer). Each bent play names its
probe (`case.PROBES`). Simplest first everywhere, so a shrunk case is the default server plus
the one play that matters.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from mcp_tempest.fuzz.client.case import BEFORE_KINDS, DEFAULT_RESULTS, PROBES, ClientCase, Play
from mcp_tempest.strategies.frames import valid_result
from mcp_tempest.strategies.mrtr import input_required_result
from mcp_tempest.strategies.sampling import draw_examples
from mcp_tempest.targets.transports import transport_named
from mcp_tempest.targets.wire import (
    INPUT_REQUIRED_METHODS,
    INVALID_PARAMS,
    LEGACY_VERSION,
    MISSING_CLIENT_CAPABILITY,
    MODERN_VERSION,
    UNSUPPORTED_PROTOCOL_VERSION,
)

JOB_METHODS = ("server/discover", "tools/list", "tools/call", "resources/list", "prompts/list",
               "resources/read", "prompts/get")
PIPELINED = ("resources/list", "prompts/list")  # what clients tend to send together
OVERSIZED_STATE = 64 * 1024
HOLD_SECONDS = 0.2
# resultType values no core type has: clients differ in which of them they take for "complete"
UNKNOWN_RESULT_TYPES = ("partial", "pending", "Complete", "", "input-required")


def _complete(method: str) -> st.SearchStrategy[dict[str, Any]]:
    def fix(result: dict[str, Any]) -> dict[str, Any]:
        if method == "server/discover":  # a server that lists no version the client speaks is a different test
            result["supportedVersions"] = [MODERN_VERSION, *[v for v in result["supportedVersions"]
                                                              if v != MODERN_VERSION][:2]]
        return result

    return valid_result(method).map(fix)


def _without_type(result: dict[str, Any]) -> dict[str, Any]:
    out = dict(result)
    out.pop("resultType", None)
    return out


def result_plays(method: str) -> st.SearchStrategy[Play]:
    complete = _complete(method)
    options = [
        complete.map(lambda r: Play("result", result=r)),
        complete.map(lambda r: Play("result", result=_without_type(r), probe="result-missing-resulttype")),
        st.tuples(complete, st.sampled_from(UNKNOWN_RESULT_TYPES)).map(
            lambda t: Play("result", result={**t[0], "resultType": t[1]}, probe="result-unknown-resulttype")),
    ]
    if method in INPUT_REQUIRED_METHODS:
        # input_required rounds are where the client's own duties are (MRTR-09..12): drawn twice as often
        options += [input_required_plays(), input_required_plays(), malformed_input_required_plays()]
    options.append(error_plays())
    return st.one_of(options)


def input_required_plays() -> st.SearchStrategy[Play]:
    def bend(t: tuple[dict[str, Any], str | None]) -> Play:
        result, state = t
        if state is None:
            return Play("result", result=result)
        if state == "request-state-empty":
            return Play("result", result={**result, "requestState": ""}, probe=state)
        return Play("result", result={**result, "requestState": "s" * OVERSIZED_STATE}, probe=state)

    return st.tuples(input_required_result(),
                     st.sampled_from([None, "request-state-empty", "request-state-oversized"])).map(bend)


def malformed_input_required_plays() -> st.SearchStrategy[Play]:
    shapes: list[dict[str, Any]] = [
        {"resultType": "input_required", "inputRequests": [{"method": "roots/list"}], "requestState": "m"},
        {"resultType": "input_required", "inputRequests": {"a": {"params": {}}}, "requestState": "m"},
        {"resultType": "input_required", "inputRequests": {"a": {"method": "tools/call", "params": {}}}},
        {"resultType": "input_required", "inputRequests": {"a": "roots/list"}},
    ]
    return st.one_of(
        st.sampled_from(shapes).map(lambda r: Play("result", result=r, probe="input-requests-malformed")),
        st.sampled_from([7, None, {"s": 1}]).map(lambda s: Play(
            "result", result={"resultType": "input_required", "requestState": s}, probe="request-state-not-string")),
    )


def error_plays() -> st.SearchStrategy[Play]:
    supported = st.sampled_from([[MODERN_VERSION], [MODERN_VERSION, LEGACY_VERSION], [LEGACY_VERSION],
                                 ["1999-01-01"]])
    return st.one_of(
        st.booleans().map(lambda with_data: Play(
            "error", code=INVALID_PARAMS, message="Invalid params", probe="error-invalid-params",
            data={"reason": "tempest"} if with_data else None)),
        st.one_of(st.none(), supported).map(lambda s: Play(
            "error", code=UNSUPPORTED_PROTOCOL_VERSION, message="Unsupported protocol version",
            data={"supported": s, "requested": MODERN_VERSION} if s is not None else None,
            probe="error-unsupported-version" if s is not None else "error-without-data")),
        st.booleans().map(lambda with_data: Play(
            "error", code=MISSING_CLIENT_CAPABILITY, message="Missing required client capability",
            data={"requiredCapabilities": {"elicitation": {}}} if with_data else None,
            probe="error-missing-capability" if with_data else "error-without-data")),
    )


def plays(method: str, *, transport: str) -> st.SearchStrategy[Play]:
    """One play for `method`, with or without stray frames around it (stdio) or an SSE stream (HTTP)."""
    def dress(t: tuple[Play, list[str], bool, bool, bool]) -> Play:
        play, before, duplicate, sse, hold = t
        play.before = before
        play.duplicate = duplicate and transport_named(transport).line_framed
        play.sse = sse and transport_named(transport).http_semantics
        play.hold = HOLD_SECONDS if hold else 0.0
        return play

    before = st.lists(st.sampled_from(BEFORE_KINDS), max_size=2) if transport_named(transport).line_framed else st.just([])
    return st.tuples(result_plays(method), before, st.booleans(), st.booleans(),
                     st.booleans() if method in PIPELINED else st.just(False)).map(dress)


def client_cases(transport: str = "stdio") -> st.SearchStrategy[ClientCase]:
    """A whole scripted server: up to three rounds for the MRTR methods, one play for the others."""
    per_method = {
        m: st.lists(plays(m, transport=transport), min_size=1 if m == "tools/call" else 0,
                    max_size=3 if m in INPUT_REQUIRED_METHODS else 1)
        for m in JOB_METHODS
    }
    modern = st.fixed_dictionaries(per_method).map(lambda d: ClientCase(plays={m: ps for m, ps in d.items() if ps}))
    # one case in four plays a 2025-11-25 server (one_of picks a branch uniformly; modern shrinks first)
    return st.one_of(modern, modern, modern, st.just(ClientCase(era="legacy")))


def coverage_cases(transport: str = "stdio") -> list[tuple[str, ClientCase]]:
    """One case per named probe that applies over `transport`, the same in every campaign (drawn
    with a fixed seed): the client campaign plays them before it explores, so whether a probe is
    tried at all is never left to chance or to how far shrinking got. Each case is the default
    server with the one play that carries the probe on `tools/call`, the call every job makes."""
    out: list[tuple[str, ClientCase]] = []
    for name in PROBES:
        if name == "legacy-server":
            out.append((name, ClientCase(era="legacy")))
            continue
        if name in BEFORE_KINDS or name == "response-duplicate":
            if not transport_named(transport).line_framed:
                continue  # stray frames around an answer exist on a stdio stream only
            duplicate = name == "response-duplicate"
            play = Play("result", result=dict(DEFAULT_RESULTS["tools/call"]), before=[] if duplicate else [name],
                        duplicate=duplicate)
        else:
            drawn = draw_examples(result_plays("tools/call").filter(lambda p, n=name: p.probe == n), 1, seed=0)
            if not drawn:
                continue
            play = drawn[0]
        out.append((name, ClientCase(plays={"tools/call": [play]})))
    # Then every method's answer bent at once, each unknown value once: which method a client reads
    # loosely (server/discover, say) and which value it takes for "complete" both vary. Last, so
    # that a small budget still tries every probe once.
    out.append(("result-missing-resulttype", _every_method("result-missing-resulttype", None)))
    out.extend(("result-unknown-resulttype", _every_method("result-unknown-resulttype", value))
               for value in UNKNOWN_RESULT_TYPES)
    return out


def _every_method(probe: str, result_type: str | None) -> ClientCase:
    """The default server with every job method's result given `result_type` (None: no resultType)."""
    plays: dict[str, list[Play]] = {}
    for method in JOB_METHODS:
        result = dict(DEFAULT_RESULTS[method])
        if result_type is None:
            result.pop("resultType", None)
        else:
            result["resultType"] = result_type
        plays[method] = [Play("result", result=result, probe=probe)]
    return ClientCase(plays=plays)

"""The malformed catalogue: every kind breaks exactly the rules it names, and shrinks well.

The judge here is independent of strategies/malformed.py: strict JSON parsing, the official
schema.json (errata applied) through `jsonschema`, the header rules of DIGEST §7.3 and the MRTR
rules of §8.2, each mapped to the rule id it belongs to. For every mutation we draw many cases
and require  analyze(case) == {mutation.rule} | mutation.also_breaks.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from mcp_tempest.strategies import http_headers as hh
from mcp_tempest.strategies import protocol as p
from mcp_tempest.strategies.frames import valid_request
from mcp_tempest.strategies.malformed import (
    MUTATIONS,
    base_methods,
    catalogue,
    malformed_case,
    malformed_retry,
    mutation_names,
    retry_mutations_for,
)
from mcp_tempest.strategies.mrtr import input_required_result, retry_for
from mcp_tempest.strategies.sampling import draw_examples
from mcp_tempest.strategies.schema_source import load_schema_source

SPEC = Path(__file__).resolve().parents[2] / "shared" / "spec" / "2026-07-28"
SCHEMA = SPEC / "schema.json"
DIGEST = SPEC.parent / "DIGEST.md"


def _official():
    if not SCHEMA.is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{SCHEMA} is missing (CI must have ../shared beside the checkout)")
        pytest.skip(f"{SCHEMA} not found: the official spec files live in ../shared beside the checkout")
    return load_schema_source(SCHEMA)


@pytest.fixture(scope="module")
def official():
    return _official()


FAST = settings(
    max_examples=20,
    database=None,
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)

# -- the independent judge ---------------------------------------------------------------------

LEGACY_UNKNOWN = {"ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
CORE_RESULT_TYPES = {"complete", "input_required"}


class _Dup(Exception):
    pass


def _no_dup_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise _Dup
    return dict(pairs)


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _line_body(line: bytes, terminator: bytes, found: set[str]) -> Any:
    """Framing and JSON text checks for one line; the decoded value, or None when unusable."""
    if b"\n" in line:
        found.add("STDIO-02")
        for fragment in line.split(b"\n"):
            try:
                json.loads(fragment.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                found.add("RPC-01")
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        found.add("RPC-02")
        return None
    if text.startswith("\ufeff"):
        found.add("RPC-02")
        text = text[1:]
    try:
        value = json.loads(text, object_pairs_hook=_no_dup_pairs)
    except _Dup:
        found.add("RPC-01")
        return None
    except ValueError:
        found.add("RPC-01")
        try:
            first, end = json.JSONDecoder().raw_decode(text)
            rest = text[end:].strip()
            if rest:
                json.loads(rest)
                found.add("STDIO-01")  # two JSON values on one line
        except ValueError:
            pass
        return None
    if b"\r" in line:
        found.add("STDIO-02")  # valid JSON with a raw CR between tokens
    return value


def _schema_errors(official, def_name: str, instance: Any) -> list[tuple[tuple, Any]]:
    return [(tuple(e.absolute_path), e) for e in official.validator(def_name).iter_errors(instance)]


def _analyze_request(official, frame: dict[str, Any], found: set[str]) -> None:
    if "method" not in frame and ("result" in frame or "error" in frame):
        found.add("RPC-12")
        return
    if frame.get("jsonrpc") != "2.0":
        found.add("RPC-01")
    method = frame.get("method")
    if not isinstance(method, str):
        found.add("RPC-01")
        return
    is_request = "id" in frame
    if is_request:
        if frame["id"] is None:
            found.add("RPC-04")
        elif not _is_id(frame["id"]):
            found.add("RPC-03")
    if not is_request:
        if method not in official.client_notifications:
            found.add("RPC-10")
            return
        params = frame.get("params")
        if not isinstance(params, dict) or "requestId" not in params:
            found.update({"CAN-01", "CAN-05"})
        elif not official.validator(official.notifications[method]).is_valid(frame):
            found.add("CAN-01")
        return
    if method == "initialize":
        found.add("VER-06")
        return
    if method in LEGACY_UNKNOWN or method not in official.requests:
        found.add("HDR-05")
        return
    if "params" not in frame:
        found.add("RPC-13")
        return
    params = frame["params"]
    if not isinstance(params, dict):
        found.add("RPC-13")
        return
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        found.add("META-04")
    else:
        version = meta.get(p.PROTOCOL_VERSION_KEY)
        caps = meta.get(p.CLIENT_CAPABILITIES_KEY)
        if not isinstance(version, str) or not isinstance(caps, dict):
            found.add("META-04")
        elif version != p.REVISION:
            found.add("META-06")
    for path, err in _schema_errors(official, official.requests[method], frame):
        if path[:1] in (("id",), ("jsonrpc",), ("method",)):
            continue
        if path == () and err.validator == "required":
            if "params" not in frame:
                found.add("RPC-13")
            continue
        if path[:2] == ("params", "_meta") and (len(path) == 2 or path[2] in p.REQUIRED_META_KEYS):
            continue  # judged above as META-04
        if path == ("params",) and err.validator == "required" and "_meta" not in params:
            continue
        if path[:2] == ("params", "inputResponses"):
            found.add("MRTR-16")
            continue
        found.add("RPC-13")


def _answer_fits(official, request: dict[str, Any], answer: Any) -> bool:
    kind = request.get("method")
    if kind not in official.input_responses:
        return False
    if not official.validator(official.input_responses[kind]).is_valid(answer):
        return False
    if kind == "elicitation/create" and answer.get("action") == "accept":
        params = request.get("params") or {}
        if params.get("mode", "form") == "form":
            return Draft202012Validator(params["requestedSchema"]).is_valid(answer.get("content", {}))
    return True


def _analyze_retry(official, frame: dict[str, Any], context: dict[str, Any], found: set[str]) -> None:
    original, result = context["request"], context["input_required"]
    if type(frame.get("id")) is type(original.get("id")) and frame.get("id") == original.get("id"):
        found.add("MRTR-09")
    params = frame.get("params", {})
    state = result.get("requestState")
    if isinstance(state, str):
        if "requestState" not in params:
            found.add("MRTR-10")
        elif params["requestState"] != state:
            found.add("MRTR-13")
        else:
            strip = lambda d: {k: v for k, v in d.items() if k not in ("inputResponses", "requestState")}  # noqa: E731
            if strip(params) != strip(original["params"]):
                found.add("MRTR-14")
    elif "requestState" in params:
        found.add("MRTR-10")
    asked = result.get("inputRequests") or {}
    answers = params.get("inputResponses")
    if asked:
        if not isinstance(answers, dict) or set(answers) != set(asked):
            found.add("MRTR-16")
        else:
            for key, req in asked.items():
                if not _answer_fits(official, req, answers[key]):
                    found.add("MRTR-16")
    elif answers is not None:
        found.add("MRTR-16")


def _analyze_headers(frame: Any, headers: dict[str, str], found: set[str]) -> None:
    # Optional whitespace around a value is not part of it (RFC 9110 §5.5): compare without it.
    headers = {k: v.strip(" \t") for k, v in headers.items()}
    if headers.get(p.H_CONTENT_TYPE) != p.CONTENT_TYPE_VALUE:
        found.add("HTTP-04")
    accept = headers.get(p.H_ACCEPT, "")
    if "application/json" not in accept or "text/event-stream" not in accept:
        found.add("HTTP-03")
    if p.H_SESSION_ID in headers:
        found.add("META-01")
    if p.H_ORIGIN in headers:
        found.add("HTTP-12")
    if p.H_PROTOCOL_VERSION not in headers:
        found.add("HDR-02")
    if not isinstance(frame, dict) or not isinstance(frame.get("method"), str):
        return
    params = frame.get("params") if isinstance(frame.get("params"), dict) else {}
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    version = meta.get(p.PROTOCOL_VERSION_KEY)
    if isinstance(version, str) and p.H_PROTOCOL_VERSION in headers and headers[p.H_PROTOCOL_VERSION] != version:
        found.add("HDR-01")
    if "id" not in frame:
        return
    if p.H_METHOD not in headers:
        found.add("HDR-02")
    elif hh.decode_header_value(headers[p.H_METHOD]) != frame["method"]:
        found.add("HDR-03")
    member = p.NAME_HEADER_SOURCE.get(frame["method"])
    if member and isinstance(params.get(member), str):
        if p.H_NAME not in headers:
            found.add("HDR-02")
        else:
            decoded = hh.decode_header_value(headers[p.H_NAME])
            if decoded is None:
                found.add("HDR-06")
            elif decoded != params[member]:
                found.add("HDR-03")


def analyze(official, case, view: str) -> set[str]:
    """Rule ids the case breaks, seen as the body/framing ('body') or as HTTP headers ('http')."""
    found: set[str] = set()
    if view == "http":
        for i, headers in enumerate(case.http_headers or ()):
            frame = case.frames[i] if case.frames is not None else None
            _analyze_headers(frame, headers, found)
        return found
    if case.terminator != b"\n":
        found.add("STDIO-01")
    values = [_line_body(line, case.terminator, found) for line in case.lines]
    ids = []
    for value in values:
        if isinstance(value, list):
            found.add("RPC-11")
        elif isinstance(value, dict):
            if case.direction == "to-client":
                result = value.get("result", {})
                if "resultType" not in result:
                    found.add("RT-01")
                elif result["resultType"] not in CORE_RESULT_TYPES:
                    found.add("RT-04")
                continue
            _analyze_request(official, value, found)
            if case.context is not None:
                _analyze_retry(official, value, case.context, found)
            if "id" in value and _is_id(value["id"]):
                ids.append((type(value["id"]), value["id"]))
    if len(ids) != len(set(ids)):
        found.add("RPC-05")
    return found


# -- the per-kind property ------------------------------------------------------------------------

# valid frames, only large or with padded header values (test_padded_header_values_break_nothing)
TO_SERVER = [m for m in MUTATIONS if MUTATIONS[m].name not in ("oversized-frame", "huge-frame", "hdr-value-whitespace")]


@pytest.mark.parametrize("name", TO_SERVER)
def test_each_kind_breaks_exactly_what_it_names(official, name):
    mutation = MUTATIONS[name]
    expected = {mutation.rule} | set(mutation.also_breaks)

    @FAST
    @given(malformed_case(name, schema_source=official))
    def check(case):
        assert case.mutation == name and case.rule == mutation.rule
        body = analyze(official, case, "body")
        http = analyze(official, case, "http") if mutation.transport != "stdio" else set()
        assert body | http == expected, (body, http, case.lines[0][:300])
        if mutation.transport == "stdio":
            assert case.http_headers is None
        elif mutation.direction == "to-server":
            assert case.http_headers is not None and len(case.http_headers) == len(case.lines)

    check()


def test_oversized_frame_is_valid_and_as_large_as_asked(official):
    @FAST
    @given(malformed_case("oversized-frame", schema_source=official, size=20_000), st.integers(0, 3))
    def check(case, _):
        assert len(case.lines[0]) >= 20_000
        assert analyze(official, case, "body") == set()
        assert analyze(official, case, "http") == set()

    check()


def test_cases_are_derived_from_a_valid_frame(official):
    """The base of every case is a valid frame (a valid retry for retry kinds)."""

    @FAST
    @given(st.sampled_from(TO_SERVER).flatmap(lambda n: malformed_case(n, schema_source=official)))
    def check(case):
        if MUTATIONS[case.mutation].base in ("request", "retry"):
            assert official.validator(official.requests[case.method]).is_valid(case.base)
        if case.context is None:
            return
        assert analyze_valid_retry(official, case.base, case.context) == set()

    check()


def analyze_valid_retry(official, frame, context):
    found: set[str] = set()
    _analyze_request(official, frame, found)
    _analyze_retry(official, frame, context, found)
    return found


# -- the catalogue itself ---------------------------------------------------------------------------


def test_catalogue_covers_the_issue_and_names_real_rules():
    text = DIGEST.read_text() if DIGEST.is_file() else None
    required = {
        "embedded-newline", "cr-in-string", "crlf-terminator", "two-frames-one-line", "bom-prefix", "invalid-utf8",
        "nul-byte", "truncated-json", "trailing-garbage", "non-json-text", "oversized-frame", "id-null", "id-float",
        "id-boolean", "id-object", "jsonrpc-missing", "jsonrpc-wrong", "method-non-string", "params-non-object",
        "batch-empty", "batch-array", "response-from-client", "duplicate-keys", "colliding-ids", "meta-missing",
        "meta-missing-protocol-version", "meta-missing-client-capabilities", "meta-version-wrong-type",
        "meta-version-unsupported", "meta-version-legacy", "null-optional-field", "unknown-method",
        "legacy-initialize", "legacy-ping", "legacy-logging-set-level", "legacy-resources-subscribe",
        "state-tampered", "state-truncated", "state-forged", "state-foreign", "responses-wrong-shape",
        "responses-wrong-key", "retry-reuses-id", "hdr-version-missing", "hdr-version-mismatch", "hdr-method-missing",
        "hdr-method-mismatch", "hdr-name-missing", "hdr-name-mismatch", "hdr-name-bad-base64",
        "hdr-content-type-wrong", "hdr-accept-missing", "hdr-session-id", "hdr-origin-foreign", "hdr-value-whitespace",
        "result-missing-resulttype", "result-unknown-resulttype",
    }
    assert required <= set(MUTATIONS)
    rows = catalogue()
    assert [r["name"] for r in rows] == list(MUTATIONS)
    for row in rows:
        assert row["transport"] in ("any", "stdio", "http")
        assert row["level"] in ("bytes", "json", "headers", "pair", "retry")
        assert row["expect"]["strength"] in ("MUST", "SHOULD", "HEURISTIC")
        assert (row["expect"]["rule"], row["expect"]["mutation"]) == (row["rule"], row["name"])
        if text is not None:
            for rule in [row["rule"], *row["also_breaks"]]:
                assert f"| {rule} |" in text, f"{row['name']}: {rule} is not a DIGEST rule id"
    assert all(MUTATIONS[n].transport != "stdio" for n in mutation_names(transport="http"))
    assert all(MUTATIONS[n].transport != "http" for n in mutation_names(transport="stdio"))


def test_padded_header_values_break_nothing(official):
    """`hdr-value-whitespace` is a valid request whose mirrored values carry optional whitespace:
    once it is trimmed nothing is wrong, and every mirrored header it sent is padded."""
    @FAST
    @given(malformed_case("hdr-value-whitespace", schema_source=official))
    def check(case):
        assert analyze(official, case, "body") == set() and analyze(official, case, "http") == set()
        headers = case.http_headers[0]
        mirrored = [h for h in (p.H_PROTOCOL_VERSION, p.H_METHOD, p.H_NAME) if h in headers]
        assert p.H_PROTOCOL_VERSION in mirrored and p.H_METHOD in mirrored
        for name in mirrored:
            value = headers[name]
            assert value != value.rstrip(" \t") and value.strip(" \t") == hh.request_headers(case.base)[name]

    check()


def test_header_mutations_only_start_from_methods_that_have_the_header(official):
    assert base_methods("hdr-name-missing", official) == ("tools/call", "resources/read", "prompts/get")
    assert "tools/call" not in base_methods("params-missing", official)
    assert base_methods("state-tampered", official) == ("tools/call", "resources/read", "prompts/get")


# -- shrinking ------------------------------------------------------------------------------------


def _simplest(strategy):
    """Hypothesis' first generated example is the all-zero-choices one: the simplest value."""
    return draw_examples(strategy, 1, seed=0)[0]


def test_a_failing_property_shrinks_to_the_mutation_on_the_smallest_valid_frame(official):
    seen = []

    @settings(database=None, max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
    @given(malformed_case("id-float", method="tools/list", schema_source=official))
    def server_accepts_everything(case):
        seen.append(case)
        raise AssertionError("pretend the server crashed on this frame")

    with pytest.raises(AssertionError):
        server_accepts_everything()
    shrunk = seen[-1]  # Hypothesis replays the minimal failing example last
    smallest = _simplest(valid_request("tools/list", schema_source=official))
    assert smallest == {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "tools/list",
        "params": {"_meta": {p.CLIENT_CAPABILITIES_KEY: {}, p.PROTOCOL_VERSION_KEY: p.REVISION}},
    }
    assert shrunk.base == smallest
    assert shrunk.frames == ({**smallest, "id": 0.5},)
    assert len(seen) > 1 and any(c.base != smallest for c in seen[:-1])  # it really did shrink


@pytest.mark.parametrize("name", ["embedded-newline", "meta-missing-protocol-version", "hdr-name-mismatch", "state-tampered"])
def test_the_simplest_case_is_the_mutation_on_the_simplest_frame(official, name):
    case = _simplest(malformed_case(name, schema_source=official))
    method = base_methods(name, official)[0]
    assert case.method == method
    if MUTATIONS[name].base == "retry":
        assert case.context["request"] == _simplest(valid_request(method, schema_source=official))
    else:
        assert case.base == _simplest(valid_request(method, schema_source=official))


# -- retries against a real context -----------------------------------------------------------------

ir_results = input_required_result()


@FAST
@given(st.data())
def test_retry_for_is_a_valid_retry(data):
    official = _official()
    method = data.draw(st.sampled_from(["tools/call", "resources/read", "prompts/get"]))
    request = data.draw(valid_request(method, schema_source=official))
    result = data.draw(ir_results)
    retry = data.draw(retry_for(request, result))
    assert official.validator(official.requests[method]).is_valid(retry)
    assert analyze_valid_retry(official, retry, {"request": request, "input_required": result}) == set()


@FAST
@given(st.data())
def test_malformed_retry_uses_the_given_context(data):
    official = _official()
    request = data.draw(valid_request("tools/call", schema_source=official))
    result = data.draw(input_required_result(with_state=True, with_requests=True))
    names = retry_mutations_for(result)
    assert set(names) == {n for n, m in MUTATIONS.items() if m.base == "retry"}
    name = data.draw(st.sampled_from(names))
    case = data.draw(malformed_retry(name, request, result, schema_source=official))
    assert case.context == {"request": request, "input_required": result}
    assert analyze(official, case, "body") == {MUTATIONS[name].rule}


def test_malformed_retry_refuses_a_context_without_what_it_needs():
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "_meta": {}}}
    only_requests = {"resultType": "input_required", "inputRequests": {"r": {"method": "roots/list"}}}
    with pytest.raises(ValueError, match="requestState"):
        malformed_retry("state-tampered", request, only_requests)
    assert "state-tampered" not in retry_mutations_for(only_requests)
    assert "responses-wrong-key" in retry_mutations_for(only_requests)


# -- the expected reaction: the oracle's own type --------------------------------------------------


def test_a_mutation_carries_the_oracles_own_expectation():
    """One type from strategy to oracle: a mutation's expectation is `fuzz.oracle.Expectation`,
    bound to the mutation's name and rule, resolved per transport, and it survives a replay file."""
    from mcp_tempest.fuzz.oracle import Expectation as OracleExpectation

    for name, mutation in MUTATIONS.items():
        exp = mutation.expect
        assert type(exp) is OracleExpectation and (exp.rule, exp.mutation) == (mutation.rule, name)
        for transport in ("stdio", "http"):
            resolved = exp.for_transport(transport)
            assert resolved.http_codes is None
            assert OracleExpectation.from_json(resolved.to_json()) == resolved
    # DIGEST §18.3: a missing protocolVersion on HTTP may be -32602 or -32020; on stdio only -32602.
    exp = MUTATIONS["meta-missing-protocol-version"].expect
    assert exp.for_transport("http").codes == {-32602, -32020}
    assert exp.for_transport("stdio").codes == {-32602}
    # Legacy methods are only judged against modern-only servers; MRTR-15 leaves the reaction open.
    assert MUTATIONS["legacy-ping"].expect.modern_only
    assert MUTATIONS["state-tampered"].expect.strength == "HEURISTIC"
    # A reaction DIGEST marks UNSPEC (RPC-05: a duplicate id in flight) is judged on survival only.
    unspec = [m.expect for m in MUTATIONS.values() if m.rule == "RPC-05"]
    assert unspec and all(e.kind == "any" and e.strength == "HEURISTIC" for e in unspec)


def test_the_oracle_judges_a_catalogue_expectation_per_transport():
    """The spec tension above, judged by the oracle on crafted exchanges: -32020 with 400 is a
    right answer over HTTP and a wrong one over stdio."""
    from mcp_tempest.fuzz.oracle import judge
    from mcp_tempest.fuzz.oracle.craft import Crafter
    from mcp_tempest.targets import wire

    name = "meta-missing-protocol-version"
    frame = wire.build_request(1, "tools/list")
    del frame["params"]["_meta"][wire.META_PROTOCOL_VERSION]
    for transport, code, wrong in (("http", -32020, False), ("http", -32602, False), ("stdio", -32020, True),
                                   ("stdio", -32602, False)):
        c = Crafter(transport)
        c.spawn()
        sent = c.send(frame)
        c.recv(wire.build_error(1, code, "bad _meta"), **({"status": 400} if transport == "http" else {}))
        found = judge(c.transcript, expectations={sent: MUTATIONS[name].expect.for_transport(transport)})
        assert any(v.probe == name for v in found) is wrong, (transport, code, found)

"""The named catalogue of malformed frames, each derived from a valid frame by one mutation.

Why every case starts from a valid frame: a finding must be able to say exactly what was
broken. Hypothesis draws the valid frame first and the mutation's few parameters after it,
so a failing property shrinks to "mutation X applied to the smallest valid frame", and the
mutation's name, rule id and expected reaction travel with the case into the report.

Each `Mutation` states:
- `rule`: the DIGEST rule id it probes (`also_breaks`: rules the mutated bytes break as a
  necessary side effect, e.g. an embedded newline also makes two lines that are not JSON);
- `transport` (any / stdio / http) and `level` (bytes / json / headers / pair / retry);
- `expect`: the server reaction the spec asks for, as the oracle's own `Expectation`
  (`strategies.expectation`), bound to the mutation's name and rule, with the strength that a
  deviation deserves. Where the spec says nothing (UNSPEC) a deviation is only a HEURISTIC;
  where the spec contradicts itself (DIGEST §18) every reading is allowed.

Cases are `MalformedCase` values with the exact bytes to send (`lines`, each one stdio line
without its terminator, or one HTTP POST body) and, for HTTP, the exact MCP headers.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from hypothesis import strategies as st

from mcp_tempest.strategies import formats
from mcp_tempest.strategies import http_headers as hh
from mcp_tempest.strategies import protocol as p
from mcp_tempest.strategies.expectation import FOUR_XX, Expectation
from mcp_tempest.strategies.frames import (
    unknown_method_names,
    valid_notification,
    valid_request,
    valid_response,
)
from mcp_tempest.strategies.mrtr import input_required_result, retry_for
from mcp_tempest.strategies.schema_source import SchemaSource, default_source
from mcp_tempest.targets import wire

# -- expected reactions (names for the kinds of `strategies.expectation.Expectation`) ----------------

ERROR = "error"  # a JSON-RPC error (for the frame's id when readable)
ERROR_OR_IGNORE = "error-or-ignore"  # an error or nothing; never a success
NO_REPLY = "no-reply"  # nothing (notifications, RPC-10)
ERROR_OR_INPUT_REQUIRED = "error-or-input-required"  # an error or a fresh input_required result
ERROR_OR_AS_VALID = "error-or-as-valid"  # an error, or what the unmutated frame would get
AS_VALID = "as-valid"  # handled like the unmutated frame (some reply)
ANY = "any"  # anything; only crash, hang or garbled output count
CLIENT_REJECTS = "client-rejects"  # server->client frame a conformant client must refuse
# an error; on HTTP a 4xx without a JSON-RPC body is a refusal too; silence on stdio is a deviation
# (at `strength`), a success is one at `served_strength`
ERROR_OR_REFUSAL = "error-or-refusal"


PARSE_CODES = frozenset({-32700, -32600})
ENVELOPE_CODES = frozenset({-32700, -32600})
PARAMS_CODES = frozenset({-32602})


# -- cases ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MalformedCase:
    """One malformed transmission (or a pair), ready for a driver.

    lines: the exact bytes; on stdio each is written followed by `terminator`, on HTTP each is
      one POST body. frames: the decoded JSON of each line when it is JSON, else None.
    http_headers: one complete MCP header set per line (None for stdio-only and to-client cases).
    base: the valid frame the case was derived from. context: for retry mutations, the original
      request and the input_required result it answers.
    """

    mutation: str
    rule: str
    transport: str
    level: str
    expect: Expectation
    method: str
    base: Any
    lines: tuple[bytes, ...]
    frames: tuple[Any, ...] | None
    http_headers: tuple[dict[str, str], ...] | None
    terminator: bytes = b"\n"
    context: dict[str, Any] | None = None
    direction: str = "to-server"

    def stdio_bytes(self) -> bytes:
        return b"".join(line + self.terminator for line in self.lines)

    @property
    def request_id(self) -> Any:
        """The id of the base frame, where a reply would be correlated (None for notifications)."""
        return self.base.get("id") if isinstance(self.base, dict) else None

    def to_json(self) -> dict[str, Any]:
        """A JSON-able description (lines as latin-1 strings, so bytes survive exactly)."""
        return {
            "mutation": self.mutation,
            "rule": self.rule,
            "transport": self.transport,
            "level": self.level,
            "method": self.method,
            "expect": self.expect.to_json(),
            "lines": [line.decode("latin-1") for line in self.lines],
            "lines_encoding": "latin-1",
            "terminator": self.terminator.decode("latin-1"),
            "http_headers": [dict(h) for h in self.http_headers] if self.http_headers else None,
            "base": self.base,
            "context": self.context,
        }


@dataclass
class _Built:
    """What a mutation's `apply` returns."""

    frames: list[Any] | None = None  # JSON values, one per line
    raw: list[bytes] | None = None  # exact bytes, one per line (byte-level)
    terminator: bytes = b"\n"
    headers: list[dict[str, str]] | None = None  # override the derived headers
    base: Any = None  # override the base (pairs, retries)


Draw = Callable[[st.SearchStrategy[Any]], Any]
Apply = Callable[[Draw, dict[str, Any], "_Env"], _Built]


@dataclass(frozen=True)
class _Env:
    source: SchemaSource
    method: str
    size: int
    context: dict[str, Any] | None = None


@dataclass(frozen=True)
class Mutation:
    name: str
    rule: str
    transport: str  # any | stdio | http
    level: str  # bytes | json | headers | pair | retry
    description: str
    expect: Expectation  # bound to this mutation's name and rule
    apply: Apply = field(repr=False, compare=False)
    also_breaks: frozenset[str] = frozenset()
    base: str = "request"  # request | notification | retry | response
    methods: tuple[str, ...] | None = None  # base methods it applies to (None: all)
    needs: tuple[str, ...] = ()  # for retry mutations: "requestState" / "inputRequests"
    direction: str = "to-server"

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "rule": self.rule,
            "also_breaks": sorted(self.also_breaks),
            "transport": self.transport,
            "level": self.level,
            "direction": self.direction,
            "methods": list(self.methods) if self.methods else None,
            "description": self.description,
            "expect": self.expect.to_json(),
        }


# -- helpers ------------------------------------------------------------------------------------------


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def _copy(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))


def _method_value_span(raw: bytes, method: str) -> tuple[int, int]:
    """Byte offsets of the method string's contents inside an orjson-encoded frame."""
    needle = b'"method":' + _dumps(method)
    at = raw.index(needle) + len(b'"method":"')
    return at, at + len(_dumps(method)) - 2


def _insert_in_method(draw: Draw, base: dict[str, Any], chunk: bytes) -> bytes:
    raw = _dumps(base)
    start, end = _method_value_span(raw, base["method"])
    at = start + draw(st.integers(0, end - start))
    return raw[:at] + chunk + raw[at:]


def _structural_offsets(raw: bytes) -> list[int]:
    """Offsets just after `{`, `,` or `:` outside strings, where JSON allows whitespace."""
    out = []
    in_string = escaped = False
    for i, byte in enumerate(raw):
        ch = chr(byte)
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{,:":
            out.append(i + 1)
    return out


def _other_frame(draw: Draw, env: _Env, base: dict[str, Any]) -> dict[str, Any]:
    """A second valid request of the same method whose id differs from the base's."""
    other = draw(valid_request(env.method, schema_source=env.source))
    if type(other["id"]) is type(base["id"]) and other["id"] == base["id"]:
        other["id"] = f"{base['id']}-2" if isinstance(base["id"], str) else base["id"] + 1
    return other


def _set(path: tuple[str, ...], value: Any) -> Callable[[Draw, dict[str, Any], _Env], _Built]:
    def apply(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
        frame = _copy(base)
        node = frame
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = draw(value) if isinstance(value, st.SearchStrategy) else value
        return _Built(frames=[frame])

    return apply


def _delete(path: tuple[str, ...]) -> Callable[[Draw, dict[str, Any], _Env], _Built]:
    def apply(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
        frame = _copy(base)
        node = frame
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
        return _Built(frames=[frame])

    return apply


_META = ("params", "_meta")


# -- byte-level mutations ---------------------------------------------------------------------------


def _embedded_newline(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    return _Built(raw=[_insert_in_method(draw, base, b"\n")])


def _cr_in_string(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    return _Built(raw=[_insert_in_method(draw, base, b"\r")])


def _cr_whitespace(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    raw = _dumps(base)
    offsets = _structural_offsets(raw)
    at = offsets[draw(st.integers(0, len(offsets) - 1))]
    return _Built(raw=[raw[:at] + b"\r" + raw[at:]])


def _crlf(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    return _Built(raw=[_dumps(base)], terminator=b"\r\n")


def _two_frames(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    other = _other_frame(draw, env, base)
    sep = draw(st.sampled_from([b"", b" "]))
    return _Built(raw=[_dumps(base) + sep + _dumps(other)])


def _bom(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    return _Built(raw=[b"\xef\xbb\xbf" + _dumps(base)])


_INVALID_UTF8 = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xc0\xaf", b"\xe2\x82", b"\x80"]


def _invalid_utf8(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    return _Built(raw=[_insert_in_method(draw, base, draw(st.sampled_from(_INVALID_UTF8)))])


def _nul(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    return _Built(raw=[_insert_in_method(draw, base, b"\x00")])


def _truncated(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    raw = _dumps(base)
    # Cut only between characters: the line must stay valid UTF-8 and be merely unfinished JSON.
    cuts = [i for i in range(1, len(raw)) if not 0x80 <= raw[i] <= 0xBF]
    cut = cuts[len(cuts) - 1 - draw(st.integers(0, len(cuts) - 1))]
    return _Built(raw=[raw[:cut]])


def _trailing_garbage(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    garbage = draw(st.sampled_from([b"x", b"}", b"]", b"#", b","]))  # never a second JSON value
    return _Built(raw=[_dumps(base) + garbage])


def _non_json_text(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    text = draw(
        st.sampled_from(
            [
                repr(base),  # a Python dict literal: single quotes, True/None
                f"{base['method']} {orjson.dumps(base.get('params')).decode()}",
                f"Content-Length: {len(_dumps(base))}",
            ]
        )
    )
    return _Built(raw=[text.encode("utf-8")])


def _duplicate_key(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    key = draw(st.sampled_from(list(base)))
    items = [b'"' + k.encode() + b'":' + _dumps(v) for k, v in base.items()]
    items.append(b'"' + key.encode() + b'":' + _dumps(base[key]))
    return _Built(raw=[b"{" + b",".join(items) + b"}"])


def _oversized(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    frame = _copy(base)
    frame["params"]["_meta"][p.PADDING_META_KEY] = ""
    frame["params"]["_meta"][p.PADDING_META_KEY] = "x" * max(0, env.size - len(_dumps(frame)))
    return _Built(frames=[frame])


HUGE_FRAME_SIZE = 11 * 1024 * 1024  # past the 10 MB line limit common stdio transports keep


def _huge(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    # `oversized-frame` follows the caller's size; this one is fixed, because the limits it probes
    # (a reader's maximum line, a body parser's maximum size) sit at a few megabytes.
    return _oversized(draw, base, _Env(env.source, env.method, HUGE_FRAME_SIZE, env.context))


# -- envelope mutations -----------------------------------------------------------------------------


def _id_float(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    frame = _copy(base)
    whole = base["id"] if isinstance(base["id"], int) else len(base["id"])
    frame["id"] = whole + draw(st.sampled_from([0.5, 0.25, 0.1]))
    return _Built(frames=[frame])


def _batch(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    items = [base] if draw(st.booleans()) is False else [base, _other_frame(draw, env, base)]
    return _Built(frames=[items])


def _batch_empty(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    return _Built(frames=[[]])


def _response_from_client(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    result = draw(
        st.sampled_from(
            [
                {"result": {"resultType": p.RESULT_COMPLETE}},
                {"result": {"action": "accept"}},
                {"error": {"code": -32603, "message": "client-side failure"}},
            ]
        )
    )
    return _Built(frames=[{"jsonrpc": p.JSONRPC, "id": base["id"], **result}])


def _colliding_ids(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    other = draw(valid_request(env.method, schema_source=env.source, request_id=base["id"]))
    return _Built(frames=[base, other])


# -- method mutations -------------------------------------------------------------------------------


def _rename(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    frame = _copy(base)
    frame["method"] = draw(unknown_method_names())
    return _Built(frames=[frame], headers=[hh.request_headers(frame)])


def _legacy(method: str, extra: Callable[[Draw, dict[str, Any]], dict[str, Any]]) -> Apply:
    def apply(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
        params = {**extra(draw, base), "_meta": _copy(base["params"]["_meta"])}
        frame = {"jsonrpc": p.JSONRPC, "id": base["id"], "method": method, "params": params}
        return _Built(frames=[frame], headers=[hh.request_headers(frame)])

    return apply


def _legacy_initialize(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    info = base["params"]["_meta"].get(p.CLIENT_INFO_KEY) or {"name": "tempest", "version": "0"}
    params = {"protocolVersion": draw(st.sampled_from(["2025-11-25", "2025-06-18", "2025-03-26"])),
              "capabilities": {}, "clientInfo": _copy(info)}
    frame = {"jsonrpc": p.JSONRPC, "id": base["id"], "method": "initialize", "params": params}
    # A legacy client opening a session sends no MCP-Protocol-Version nor Mcp-Method.
    headers = {p.H_CONTENT_TYPE: p.CONTENT_TYPE_VALUE, p.H_ACCEPT: p.ACCEPT_VALUE}
    return _Built(frames=[frame], headers=[headers])


# -- _meta mutations --------------------------------------------------------------------------------


def _meta_version(values: list[str]) -> Apply:
    def apply(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
        frame = _copy(base)
        frame["params"]["_meta"][p.PROTOCOL_VERSION_KEY] = draw(st.sampled_from(values))
        return _Built(frames=[frame], headers=[hh.request_headers(frame)])  # header agrees (HDR-04)

    return apply


def _null_optional(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    node = env.source.params_node(env.method)
    required = set(node.get("required", []))
    skip = {"inputResponses", "requestState", "_meta"}
    params_opts = [("params", k) for k in node.get("properties", {}) if k not in required and k not in skip]
    meta_opts = [("_meta", k) for k in (p.CLIENT_INFO_KEY, p.LOG_LEVEL_KEY, p.PROGRESS_TOKEN_KEY)]
    where, key = draw(st.sampled_from(meta_opts + params_opts))
    frame = _copy(base)
    target = frame["params"] if where == "params" else frame["params"]["_meta"]
    target[key] = None
    return _Built(frames=[frame])


# -- notification mutations -------------------------------------------------------------------------


def _unknown_notification(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    frame = _copy(base)
    frame["method"] = "notifications/x-" + draw(formats.identifier(1, 8))
    return _Built(frames=[frame])


# -- HTTP header mutations --------------------------------------------------------------------------


def _headers(change: Callable[[Draw, dict[str, Any], dict[str, str]], None]) -> Apply:
    def apply(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
        headers = hh.request_headers(base)
        change(draw, base, headers)
        return _Built(frames=[base], headers=[headers])

    return apply


def _drop(name: str) -> Callable[[Draw, dict[str, Any], dict[str, str]], None]:
    def change(draw: Draw, base: dict[str, Any], headers: dict[str, str]) -> None:
        headers.pop(name, None)

    return change


def _replace(name: str, values: st.SearchStrategy[str]) -> Callable[[Draw, dict[str, Any], dict[str, str]], None]:
    def change(draw: Draw, base: dict[str, Any], headers: dict[str, str]) -> None:
        headers[name] = draw(values)

    return change


def _method_mismatch(draw: Draw, base: dict[str, Any], headers: dict[str, str]) -> None:
    from mcp_tempest.strategies.schema_source import METHOD_ORDER

    others = [m for m in (*METHOD_ORDER, "ping") if m != base["method"]]
    headers[p.H_METHOD] = draw(st.sampled_from(others))


def _name_value(base: dict[str, Any]) -> str:
    return base["params"][p.NAME_HEADER_SOURCE[base["method"]]]


def _name_mismatch(draw: Draw, base: dict[str, Any], headers: dict[str, str]) -> None:
    body = _name_value(base)
    suffix = draw(st.sampled_from(["-other", "x", "/"]))
    headers[p.H_NAME] = hh.encode_header_value(body + suffix)


_BAD_BASE64 = ["@@@@", "#!", "a", "Zm9v!", base64.b64encode(b"\xff\xfe").decode()]


def _name_bad_base64(draw: Draw, base: dict[str, Any], headers: dict[str, str]) -> None:
    headers[p.H_NAME] = "=?base64?" + draw(st.sampled_from(_BAD_BASE64)) + "?="


#: The mirrored headers (DIGEST 7.2) whose values a server compares with the body.
_MIRRORED = (p.H_PROTOCOL_VERSION, p.H_METHOD, p.H_NAME)


def _pad_values(draw: Draw, base: dict[str, Any], headers: dict[str, str]) -> None:
    """Optional whitespace (SP / HTAB, RFC 9110 §5.5) around every mirrored value, never a changed
    value. Always some after it: common HTTP parsers drop the leading part but keep the trailing one."""
    for name in [*_MIRRORED, *(k for k in headers if k.startswith("Mcp-Param-"))]:
        if name in headers:
            before = draw(st.sampled_from(["", " ", "  ", "\t"]))
            after = draw(st.sampled_from([" ", "  ", "\t", " \t "]))
            headers[name] = before + headers[name] + after


def _session_id(draw: Draw, base: dict[str, Any], headers: dict[str, str]) -> None:
    headers[p.H_SESSION_ID] = draw(st.text(alphabet="0123456789abcdef", min_size=8, max_size=32))


# -- retry mutations (need the original request and its input_required result) ---------------------

_STATE_ALPHABET = formats.IDENT_ALPHABET[:-2] + "-_"


def _retry_state(transform: Callable[[Draw, str], str]) -> Apply:
    def apply(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
        frame = _copy(base)
        frame["params"]["requestState"] = transform(draw, base["params"]["requestState"])
        return _Built(frames=[frame])

    return apply


def _tamper(draw: Draw, state: str) -> str:
    at = draw(st.integers(0, len(state) - 1))
    replacement = draw(st.sampled_from([c for c in _STATE_ALPHABET if c != state[at]]))
    return state[:at] + replacement + state[at + 1 :]


def _truncate(draw: Draw, state: str) -> str:
    return state[: len(state) - 1 - draw(st.integers(0, len(state) - 1))]


#: requestState values no server minted (the `state-forged` row; the mrtr property plays them too)
FORGED_STATES = [
    base64.urlsafe_b64encode(b'{"admin":true}').decode().rstrip("="),
    base64.urlsafe_b64encode(b'{"step":99,"user":"root"}').decode().rstrip("="),
    "eyJhbGciOiJub25lIn0.eyJzdWIiOiJyb290In0.",
    "AAAA",
    "null",
]


def _forge(draw: Draw, state: str) -> str:
    forged = draw(st.sampled_from(FORGED_STATES))
    return forged if forged != state else forged + "A"


def _state_foreign(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    frame = _copy(base)
    params = frame["params"]
    if frame["method"] == "resources/read":
        params["uri"] = params["uri"] + "-foreign"
    elif frame["method"] == "prompts/get":
        args = params.setdefault("arguments", {})
        args["tempestForeign"] = "x" * (1 + draw(st.integers(0, 3)))  # prompt arguments are strings
    else:
        args = params.setdefault("arguments", {})
        args["tempestForeign"] = 1 + draw(st.integers(0, 9))
    return _Built(frames=[frame])


def _state_missing(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    frame = _copy(base)
    del frame["params"]["requestState"]
    return _Built(frames=[frame])


# Each is invalid for every arm of InputResponse (ElicitResult, CreateMessageResult, ListRootsResult).
_WRONG_SHAPES: list[Any] = ["accept", {"action": "maybe"}, {"content": {}}, 42, None, [], {"roots": "file:///"}]


def _responses_wrong_shape(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    frame = _copy(base)
    responses = frame["params"]["inputResponses"]
    key = draw(st.sampled_from(sorted(responses)))
    responses[key] = _copy(draw(st.sampled_from(_WRONG_SHAPES)))
    return _Built(frames=[frame])


def _responses_wrong_key(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    frame = _copy(base)
    responses = frame["params"]["inputResponses"]
    asked = set((env.context or {}).get("input_required", {}).get("inputRequests", {}))
    renamed = {}
    for key, value in responses.items():
        new = "x-" + key
        while new in asked or new in renamed:
            new = "x-" + new
        renamed[new] = value
    frame["params"]["inputResponses"] = renamed
    return _Built(frames=[frame])


def _retry_reuses_id(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    frame = _copy(base)
    frame["id"] = (env.context or {})["request"]["id"]
    return _Built(frames=[frame])


# -- server->client frames (our parser, and clients) -----------------------------------------------


def _result_missing_type(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    frame = _copy(base)
    del frame["result"]["resultType"]
    return _Built(frames=[frame])


def _result_unknown_type(draw: Draw, base: dict[str, Any], env: _Env) -> _Built:
    frame = _copy(base)
    frame["result"]["resultType"] = draw(st.sampled_from(["partial", "pending", "Complete", "", "input-required"]))
    return _Built(frames=[frame])


# -- the catalogue ------------------------------------------------------------------------------------

def _reaction(kind: str, **fields: Any) -> Expectation:
    """A catalogue reaction, shared by several mutations; `_m` binds it to each one's name and rule.
    Where the spec leaves the reaction open its strength is HEURISTIC (the note says why)."""
    return Expectation(kind, "", **fields)  # type: ignore[arg-type]


_GARBAGE = _reaction(
    ERROR_OR_REFUSAL,
    codes=PARSE_CODES,
    strength="SHOULD",
    served_strength="MUST",
    note="not JSON: a parse error (-32700, id omitted or null, RPC-07), as JSON-RPC 2.0 answers it; "
    "silence is a SHOULD deviation (the DIGEST restates the format, not the duty to answer), a result a MUST",
)
_ENVELOPE = _reaction(
    ERROR_OR_REFUSAL,
    codes=ENVELOPE_CODES,
    strength="SHOULD",
    served_strength="MUST",
    note="not a valid JSON-RPC request: -32600 (or -32700), as JSON-RPC 2.0 answers it; silence is a "
    "SHOULD deviation, serving it a MUST (RPC-01, RPC-03, RPC-04)",
)
_LENIENT = _reaction(
    ERROR_OR_AS_VALID,
    codes=PARSE_CODES | PARAMS_CODES,
    strength="HEURISTIC",
    note="the spec does not say; a parse error or normal handling are both fine, a crash is not",
)
_META_MISSING = _reaction(
    ERROR,
    codes=PARAMS_CODES,
    http_codes=PARAMS_CODES | {-32020},
    statuses=frozenset({400}),
    strength="MUST",
    note="META-04: -32602 / HTTP 400; on HTTP -32020 is accepted too (DIGEST §18.3)",
)
_META_BAD_TYPE = _reaction(
    ERROR,
    codes=PARAMS_CODES | {-32600, -32022},
    http_codes=PARAMS_CODES | {-32600, -32022, -32020},
    statuses=frozenset({400}),
    strength="SHOULD",
    note="a required _meta member of the wrong type is as unusable as a missing one",
)
_UNKNOWN_METHOD = _reaction(
    ERROR,
    codes=frozenset({-32601}),
    statuses=frozenset({404}),
    strength="MUST",
    note="HDR-05: -32601, and 404 on HTTP",
)
_LEGACY_METHOD = _reaction(
    ERROR,
    codes=frozenset({-32601}),
    statuses=frozenset({404}),
    strength="MUST",
    modern_only=True,
    note="removed in 2026-07-28 (DIGEST §13): an unknown method; a dual-era server may serve it",
)
_HEADER = _reaction(
    ERROR,
    codes=frozenset({-32020}),
    statuses=frozenset({400}),
    strength="MUST",
    note="HDR-01..03/06: 400 with -32020 HeaderMismatchError",
)
_STATE = _reaction(
    ERROR_OR_INPUT_REQUIRED,
    strength="HEURISTIC",
    note="MRTR-15: any error (-32602 is natural) or a fresh input_required; a complete result "
    "honouring the state is a HEURISTIC finding (it matters when the state guards authorisation)",
)
_RESPONSES = _reaction(
    ERROR_OR_INPUT_REQUIRED,
    strength="SHOULD",
    note="MRTR-16: a JSON-RPC error for malformed answers, or a new input_required for missing ones",
)
_NOT_JSON_HTTP = FOUR_XX | {202}

_NEEDS_NAME = tuple(p.NAME_HEADER_SOURCE)
_NO_NAME = tuple(m for m in wire.MODERN_METHODS if m not in wire.NAME_HEADER_FIELD)


def _m(name: str, rule: str, transport: str, level: str, description: str, expect: Expectation, apply: Apply,
       **kw: Any) -> Mutation:
    return Mutation(name, rule, transport, level, description, expect.probing(rule, name), apply, **kw)


_CATALOGUE: tuple[Mutation, ...] = (
    # framing and bytes
    _m("embedded-newline", "STDIO-02", "stdio", "bytes", "a raw LF inside the method string splits the frame in two lines",
       _GARBAGE, _embedded_newline, also_breaks=frozenset({"RPC-01"})),
    _m("cr-in-string", "RPC-01", "any", "bytes", "a raw CR inside a string (control characters must be escaped)",
       _GARBAGE, _cr_in_string),
    _m("cr-whitespace", "STDIO-02", "stdio", "bytes", "a raw CR between tokens: valid JSON, but a CR-as-newline reader splits it",
       _LENIENT, _cr_whitespace),
    _m("crlf-terminator", "STDIO-01", "stdio", "bytes", "the line ends in CRLF instead of LF (the CR is JSON whitespace)",
       _reaction(ERROR_OR_AS_VALID, codes=PARSE_CODES, strength="HEURISTIC", note="tolerating the CR is the friendly reading"),
       _crlf),
    _m("two-frames-one-line", "STDIO-01", "stdio", "bytes", "two valid requests on one line", _LENIENT, _two_frames,
       also_breaks=frozenset({"RPC-01"})),
    _m("bom-prefix", "RPC-02", "any", "bytes", "a UTF-8 byte order mark before the JSON", _LENIENT, _bom),
    _m("invalid-utf8", "RPC-02", "any", "bytes", "an invalid UTF-8 sequence inside the method string",
       _reaction(ERROR_OR_IGNORE, codes=PARSE_CODES | {-32601}, statuses=_NOT_JSON_HTTP, strength="SHOULD",
              note="-32700; -32601 if the decoder substituted U+FFFD and the method became unknown"),
       _invalid_utf8),
    _m("nul-byte", "RPC-01", "any", "bytes", "a raw NUL inside the method string", _GARBAGE, _nul),
    _m("truncated-json", "RPC-01", "any", "bytes", "the frame cut short", _GARBAGE, _truncated),
    _m("trailing-garbage", "RPC-01", "any", "bytes", "a valid frame followed by non-whitespace on the same line",
       _LENIENT, _trailing_garbage),
    _m("non-json-text", "RPC-01", "any", "bytes", "the frame written as text that is not JSON", _GARBAGE, _non_json_text),
    _m("duplicate-keys", "RPC-01", "any", "bytes", "a top-level key repeated with the same value", _LENIENT, _duplicate_key),
    _m("oversized-frame", "RPC-01", "any", "json", "a valid frame padded in _meta to the size parameter (default 1 MiB)",
       _reaction(ERROR_OR_AS_VALID, strength="HEURISTIC", note="refusing large frames cleanly is fine; dying is not"),
       _oversized),
    _m("huge-frame", "RPC-01", "any", "json", "a valid frame padded in _meta to 11 MiB, past common line limits",
       _reaction(ERROR_OR_AS_VALID, statuses=FOUR_XX, strength="HEURISTIC",
              note="a server may refuse a frame that large (an error; on HTTP a 4xx such as 413), but should say "
              "so and stay up; dying is HEURISTIC"),
       _huge, methods=("server/discover", "tools/list")),
    # JSON-RPC envelope
    _m("id-null", "RPC-04", "any", "json", "id is null", _ENVELOPE, _set(("id",), None)),
    _m("id-float", "RPC-03", "any", "json", "id is a fractional number", _ENVELOPE, _id_float),
    _m("id-boolean", "RPC-03", "any", "json", "id is a boolean", _ENVELOPE, _set(("id",), st.booleans())),
    _m("id-object", "RPC-03", "any", "json", "id is an object", _ENVELOPE,
       _set(("id",), st.sampled_from([{}, {"id": 1}]))),
    _m("id-array", "RPC-03", "any", "json", "id is an array", _ENVELOPE, _set(("id",), st.sampled_from([[], [1]]))),
    _m("jsonrpc-missing", "RPC-01", "any", "json", "no jsonrpc member", _ENVELOPE, _delete(("jsonrpc",))),
    _m("jsonrpc-wrong", "RPC-01", "any", "json", "jsonrpc is not the string 2.0", _ENVELOPE,
       _set(("jsonrpc",), st.sampled_from(["1.0", "2", "2.0.0", 2.0, 2, None, ""]))),
    _m("method-non-string", "RPC-01", "any", "json", "method is not a string", _ENVELOPE,
       _set(("method",), st.sampled_from([1, None, True, ["tools/list"], {"name": "tools/list"}]))),
    _m("params-non-object", "RPC-13", "any", "json", "params is an array, string, number, boolean or null",
       _reaction(ERROR_OR_IGNORE, codes=ENVELOPE_CODES | PARAMS_CODES, strength="SHOULD",
              note="no params object means no _meta (META-04); -32600 is the other natural reading"),
       _set(("params",), st.sampled_from([[], ["x"], "x", 1, True, None])), methods=_NO_NAME),
    _m("params-missing", "RPC-13", "any", "json", "no params member, hence no _meta (RPC-13 -> META-04)", _META_MISSING,
       _delete(("params",)), methods=_NO_NAME),
    _m("batch-empty", "RPC-11", "any", "json", "an empty JSON array",
       _reaction(ERROR_OR_REFUSAL, codes=ENVELOPE_CODES, strength="HEURISTIC",
              note="RPC-11: batching was removed; the reply is UNSPEC, an error is expected (silence: HEURISTIC)"),
       _batch_empty),
    _m("batch-array", "RPC-11", "any", "json", "one or two valid requests wrapped in an array",
       _reaction(ERROR_OR_REFUSAL, codes=ENVELOPE_CODES, strength="HEURISTIC",
              note="RPC-11: batching was removed; the reply is UNSPEC, an error or 4xx is expected (else HEURISTIC)"),
       _batch),
    _m("response-from-client", "RPC-12", "any", "json", "a JSON-RPC response sent by the client",
       _reaction(ERROR_OR_IGNORE, codes=ENVELOPE_CODES, statuses=_NOT_JSON_HTTP, strength="HEURISTIC",
              note="servers never initiate requests, so there is nothing to answer"),
       _response_from_client),
    _m("colliding-ids", "RPC-05", "any", "pair", "two requests in flight with the same id",
       _reaction(ANY, strength="HEURISTIC", note="RPC-05 binds the client; the server's reaction is unspecified"),
       _colliding_ids),
    # _meta
    _m("meta-missing", "META-04", "any", "json", "params without _meta", _META_MISSING, _delete(_META)),
    _m("meta-missing-protocol-version", "META-04", "any", "json", "_meta without protocolVersion", _META_MISSING,
       _delete((*_META, p.PROTOCOL_VERSION_KEY))),
    _m("meta-missing-client-capabilities", "META-04", "any", "json", "_meta without clientCapabilities",
       _reaction(ERROR, codes=PARAMS_CODES, statuses=frozenset({400}), note="META-04: -32602 / HTTP 400"),
       _delete((*_META, p.CLIENT_CAPABILITIES_KEY))),
    _m("meta-not-object", "META-04", "any", "json", "_meta is not an object", _META_BAD_TYPE,
       _set(_META, st.sampled_from(["x", [], 1, True, None]))),
    _m("meta-version-wrong-type", "META-04", "any", "json", "protocolVersion is not a string", _META_BAD_TYPE,
       _set((*_META, p.PROTOCOL_VERSION_KEY), st.sampled_from([20260728, None, True, ["2026-07-28"], {"v": "2026-07-28"}]))),
    _m("meta-capabilities-wrong-type", "META-04", "any", "json", "clientCapabilities is not an object", _META_BAD_TYPE,
       _set((*_META, p.CLIENT_CAPABILITIES_KEY), st.sampled_from(["{}", [], 1, True, None]))),
    _m("meta-version-unsupported", "META-06", "any", "json", "a protocolVersion no revision has (header agrees on HTTP)",
       _reaction(ERROR, codes=frozenset({-32022}), statuses=frozenset({400}),
              note="META-06 / HDR-04: -32022 with data.supported and data.requested, HTTP 400"),
       _meta_version(["1900-01-01", "2099-12-31", "2026-07-29", "draft", "2026-7-28"])),
    _m("meta-version-legacy", "META-06", "any", "json", "a handshake-era protocolVersion in _meta (header agrees on HTTP)",
       _reaction(ERROR, codes=frozenset({-32022}), statuses=frozenset({400}), modern_only=True,
              note="a modern-only server does not implement it: -32022"),
       _meta_version(["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"])),
    _m("meta-client-info-wrong-type", "RPC-13", "any", "json", "clientInfo is not an Implementation",
       _reaction(ERROR_OR_AS_VALID, codes=PARAMS_CODES, strength="HEURISTIC",
              note="clientInfo must not change behaviour (META-08); -32602 or ignoring it are both fine"),
       _set((*_META, p.CLIENT_INFO_KEY), st.sampled_from(["x", [], 1, {"name": 1, "version": "1"}, {}]))),
    _m("meta-log-level-invalid", "RPC-13", "any", "json", "logLevel is not a LoggingLevel",
       _reaction(ERROR, codes=PARAMS_CODES, strength="SHOULD", duty="LOG-03",
                 note="an invalid logLevel SHOULD get -32602 (DIGEST §13): the server's duty LOG-03"),
       _set((*_META, p.LOG_LEVEL_KEY), st.sampled_from(["verbose", "DEBUG", "trace", "", "warn"]))),
    _m("meta-progress-token-wrong-type", "RPC-13", "any", "json", "progressToken is neither string nor integer",
       _reaction(ERROR_OR_AS_VALID, codes=PARAMS_CODES, strength="HEURISTIC"),
       _set((*_META, p.PROGRESS_TOKEN_KEY), st.sampled_from([1.5, True, [], {}]))),
    _m("null-optional-field", "RPC-13", "any", "json", "null for an optional field (may be omitted, is not nullable)",
       _reaction(ERROR_OR_AS_VALID, codes=PARAMS_CODES, strength="HEURISTIC",
              note="reading null as absent or answering -32602 are both fine"),
       _null_optional),
    # methods
    _m("unknown-method", "HDR-05", "any", "json", "a method no revision defines", _UNKNOWN_METHOD, _rename),
    _m("legacy-ping", "HDR-05", "any", "json", "ping, removed in 2026-07-28", _LEGACY_METHOD,
       _legacy("ping", lambda draw, base: {})),
    _m("legacy-logging-set-level", "HDR-05", "any", "json", "logging/setLevel, removed in 2026-07-28", _LEGACY_METHOD,
       _legacy("logging/setLevel", lambda draw, base: {"level": draw(st.sampled_from(["info", "debug"]))})),
    _m("legacy-resources-subscribe", "HDR-05", "any", "json", "resources/subscribe, removed in 2026-07-28", _LEGACY_METHOD,
       _legacy("resources/subscribe", lambda draw, base: {"uri": draw(formats.uri())})),
    _m("legacy-initialize", "VER-06", "any", "json", "a 2025-era initialize request (no _meta, no MCP headers)",
       _reaction(ERROR, statuses=frozenset({400, 404}), modern_only=True,
              note="a modern-only server errors with an implementation-defined code, SHOULD list its versions"),
       _legacy_initialize, also_breaks=frozenset({"HDR-02"})),
    # notifications
    _m("unknown-notification", "RPC-10", "any", "json", "a notification method no revision defines",
       _reaction(NO_REPLY, statuses=_NOT_JSON_HTTP, note="RPC-10: never reply to a notification"),
       _unknown_notification, base="notification"),
    _m("cancelled-missing-request-id", "CAN-05", "stdio", "json", "notifications/cancelled without requestId (CAN-01)",
       _reaction(NO_REPLY, note="CAN-05: ignore invalid cancellations silently; RPC-10: no reply to notifications"),
       _delete(("params", "requestId")), base="notification", also_breaks=frozenset({"CAN-01"})),
    # HTTP headers
    _m("hdr-version-missing", "HDR-02", "http", "headers", "no MCP-Protocol-Version header",
       _reaction(ERROR, codes=frozenset({-32020}), statuses=frozenset({400}), modern_only=True,
              note="HDR-02; a server still serving pre-2025-06-18 clients MAY assume 2025-03-26"),
       _headers(_drop(p.H_PROTOCOL_VERSION))),
    _m("hdr-version-mismatch", "HDR-01", "http", "headers", "MCP-Protocol-Version differs from _meta",
       _reaction(ERROR, codes=frozenset({-32020, -32022}), statuses=frozenset({400}),
              note="HDR-01 -32020; -32022 if the server checks the header's version first"),
       _headers(_replace(p.H_PROTOCOL_VERSION, st.sampled_from(["2025-11-25", "2025-06-18", "1900-01-01"])))),
    _m("hdr-method-missing", "HDR-02", "http", "headers", "no Mcp-Method header", _HEADER, _headers(_drop(p.H_METHOD))),
    _m("hdr-method-mismatch", "HDR-03", "http", "headers", "Mcp-Method names another method", _HEADER,
       _headers(_method_mismatch)),
    _m("hdr-name-missing", "HDR-02", "http", "headers", "no Mcp-Name header (tools/call, prompts/get, resources/read)",
       _HEADER, _headers(_drop(p.H_NAME)), methods=_NEEDS_NAME),
    _m("hdr-name-mismatch", "HDR-03", "http", "headers", "Mcp-Name differs from the body", _HEADER,
       _headers(_name_mismatch), methods=_NEEDS_NAME),
    _m("hdr-name-bad-base64", "HDR-06", "http", "headers", "Mcp-Name is a base64 sentinel that does not decode",
       _HEADER, _headers(_name_bad_base64), methods=_NEEDS_NAME),
    _m("hdr-value-whitespace", "HDR-03", "http", "headers",
       "valid mirrored header values padded with spaces and tabs (optional whitespace, RFC 9110 §5.5)",
       _reaction(AS_VALID, note="the padding is not part of the value, so the values match the body: serve it; "
                 "-32020 for it is an HDR-03 deviation (judged by the HDR-03 rule)"),
       _headers(_pad_values)),
    _m("hdr-content-type-wrong", "HTTP-04", "http", "headers", "Content-Type is not application/json",
       _reaction(ERROR_OR_AS_VALID, statuses=frozenset({400, 406, 415}), strength="HEURISTIC"),
       _headers(_replace(p.H_CONTENT_TYPE, st.sampled_from(["text/plain", "application/x-www-form-urlencoded"])))),
    _m("hdr-accept-missing", "HTTP-03", "http", "headers", "no Accept header",
       _reaction(ERROR_OR_AS_VALID, statuses=frozenset({400, 406}), strength="HEURISTIC",
              note="HTTP-03 binds the client; no 406 rule exists"),
       _headers(_drop(p.H_ACCEPT))),
    _m("hdr-accept-json-only", "HTTP-03", "http", "headers", "Accept lists only application/json",
       _reaction(ERROR_OR_AS_VALID, statuses=frozenset({400, 406}), strength="HEURISTIC"),
       _headers(_replace(p.H_ACCEPT, st.just("application/json")))),
    _m("hdr-session-id", "META-01", "http", "headers", "an Mcp-Session-Id header (sessions are gone)",
       _reaction(AS_VALID, strength="SHOULD", forbid_headers=frozenset({"mcp-session-id"}),
              note="ignore it, and never mint or echo a session id (DIGEST §7.4)"),
       _headers(_session_id)),
    _m("hdr-origin-foreign", "HTTP-12", "http", "headers", "a foreign Origin header",
       _reaction(ERROR_OR_REFUSAL, statuses=frozenset({403}),
              note="HTTP-12: 403, with or without a JSON-RPC error (which has no id)"),
       _headers(_replace(p.H_ORIGIN, st.sampled_from(["http://evil.example", "https://attacker.invalid"])))),
    # MRTR retries
    _m("state-tampered", "MRTR-13", "any", "retry", "the retry's requestState with one character changed", _STATE,
       _retry_state(_tamper), base="retry", needs=("requestState",)),
    _m("state-truncated", "MRTR-13", "any", "retry", "the retry's requestState cut short", _STATE,
       _retry_state(_truncate), base="retry", needs=("requestState",)),
    _m("state-forged", "MRTR-13", "any", "retry", "a requestState the server never minted", _STATE,
       _retry_state(_forge), base="retry", needs=("requestState",)),
    _m("state-foreign", "MRTR-14", "any", "retry", "the exact requestState replayed with different params", _STATE,
       _state_foreign, base="retry", needs=("requestState",)),
    _m("state-missing", "MRTR-10", "any", "retry", "the retry leaves out the requestState it was given", _STATE,
       _state_missing, base="retry", needs=("requestState",)),
    _m("responses-wrong-shape", "MRTR-16", "any", "retry", "one inputResponses value fits no InputResponse", _RESPONSES,
       _responses_wrong_shape, base="retry", needs=("inputRequests",)),
    _m("responses-wrong-key", "MRTR-16", "any", "retry", "inputResponses keyed by names the server did not ask",
       _RESPONSES, _responses_wrong_key, base="retry", needs=("inputRequests",)),
    _m("retry-reuses-id", "MRTR-09", "any", "retry", "the retry reuses the original request's id",
       _reaction(ANY, strength="HEURISTIC", note="MRTR-09 binds the client; a stateless server cannot tell"),
       _retry_reuses_id, base="retry"),
    # server -> client
    _m("result-missing-resulttype", "RT-01", "any", "json", "a result without resultType (for clients and our parser)",
       _reaction(CLIENT_REJECTS, note="RT-01/RT-05: only pre-2026 servers may omit it"), _result_missing_type,
       base="response", direction="to-client"),
    _m("result-unknown-resulttype", "RT-04", "any", "json", "a result whose resultType is not a core value",
       _reaction(CLIENT_REJECTS, note="RT-04: treat unknown values as invalid"), _result_unknown_type,
       base="response", direction="to-client"),
)

MUTATIONS: Mapping[str, Mutation] = {m.name: m for m in _CATALOGUE}
DEFAULT_OVERSIZE = 1 << 20


def catalogue() -> list[dict[str, Any]]:
    """Every mutation as a JSON-able row (what `mcp-tempest frames --list` prints)."""
    return [m.summary() for m in _CATALOGUE]


def mutation_names(*, transport: str | None = None, level: str | None = None, direction: str = "to-server") -> list[str]:
    """Names of the mutations usable on `transport` (stdio/http; 'any' mutations always)."""
    out = []
    for m in _CATALOGUE:
        if m.direction != direction:
            continue
        if transport is not None and m.transport not in ("any", transport):
            continue
        if level is not None and m.level != level:
            continue
        out.append(m.name)
    return out


def get_mutation(name: str) -> Mutation:
    try:
        return MUTATIONS[name]
    except KeyError:
        raise ValueError(f"unknown mutation {name!r} (see `mcp-tempest frames --list`)") from None


def base_methods(name: str, schema_source: SchemaSource | None = None) -> tuple[str, ...]:
    """The methods whose valid frames the mutation can start from."""
    mutation = get_mutation(name)
    source = schema_source if schema_source is not None else default_source()
    if mutation.base == "notification":
        return source.client_notifications
    if mutation.base == "retry":
        allowed = [m for m in source.request_methods if m in source.input_required_methods]
    else:
        allowed = list(source.request_methods)
    if mutation.methods is not None:
        allowed = [m for m in allowed if m in mutation.methods]
    return tuple(allowed)


def _finish(mutation: Mutation, env: _Env, base: Any, built: _Built) -> MalformedCase:
    base = built.base if built.base is not None else base
    if built.raw is not None:
        lines = tuple(built.raw)
        frames = None
    else:
        frames = tuple(built.frames or ())
        lines = tuple(_dumps(f) for f in frames)
    headers: tuple[dict[str, str], ...] | None = None
    if mutation.transport != "stdio" and mutation.direction == "to-server":
        if built.headers is not None:
            headers = tuple(built.headers)
        elif mutation.level in ("pair", "retry") and frames is not None:
            # a retry mutation changes what a conformant client would also put in headers
            headers = tuple(hh.request_headers(f) for f in frames)
        else:
            headers = tuple(hh.request_headers(base) for _ in lines)
    return MalformedCase(
        mutation=mutation.name,
        rule=mutation.rule,
        transport=mutation.transport,
        level=mutation.level,
        expect=mutation.expect,
        method=env.method,
        base=base,
        lines=lines,
        frames=frames,
        http_headers=headers,
        terminator=built.terminator,
        context=env.context,
        direction=mutation.direction,
    )


def _check_context(mutation: Mutation, result: Mapping[str, Any]) -> None:
    if "requestState" in mutation.needs and not isinstance(result.get("requestState"), str):
        raise ValueError(f"mutation {mutation.name} needs an input_required result with a requestState")
    if "requestState" in mutation.needs and not result.get("requestState"):
        raise ValueError(f"mutation {mutation.name} needs a non-empty requestState")
    if "inputRequests" in mutation.needs and not result.get("inputRequests"):
        raise ValueError(f"mutation {mutation.name} needs an input_required result with inputRequests")


def retry_mutations_for(input_required_result: Mapping[str, Any]) -> list[str]:
    """The retry mutations that apply to this input_required result."""
    out = []
    for m in _CATALOGUE:
        if m.base != "retry":
            continue
        try:
            _check_context(m, input_required_result)
        except ValueError:
            continue
        out.append(m.name)
    return out


def malformed_retry(
    name: str,
    request: Mapping[str, Any],
    input_required_result: Mapping[str, Any],
    *,
    schema_source: SchemaSource | None = None,
) -> st.SearchStrategy[MalformedCase]:
    """A retry-level mutation applied to the valid retry of `request` after `input_required_result`.

    Use the real request the target answered and the real result it gave. Raises ValueError
    when the result lacks what the mutation needs (see `retry_mutations_for`).
    """
    mutation = get_mutation(name)
    if mutation.base != "retry":
        raise ValueError(f"{name} is not a retry mutation")
    _check_context(mutation, input_required_result)
    source = schema_source if schema_source is not None else default_source()
    req = _copy(dict(request))
    res = _copy(dict(input_required_result))
    env = _Env(source, str(req.get("method")), DEFAULT_OVERSIZE, {"request": req, "input_required": res})

    @st.composite
    def build(draw: Draw) -> MalformedCase:
        base = draw(retry_for(req, res))
        return _finish(mutation, env, base, mutation.apply(draw, base, env))

    return build()


def malformed_case(
    name: str,
    *,
    method: str | None = None,
    schema_source: SchemaSource | None = None,
    size: int = DEFAULT_OVERSIZE,
) -> st.SearchStrategy[MalformedCase]:
    """Cases of mutation `name`, each applied to a freshly drawn valid frame.

    method: the base frame's method (default: any the mutation allows, simplest first).
    size: the target line size of `oversized-frame`.
    Retry mutations draw their own context (a first-leg request and a synthetic
    input_required result); against a real target use `malformed_retry` instead.
    """
    mutation = get_mutation(name)
    source = schema_source if schema_source is not None else default_source()
    allowed = base_methods(name, source)
    if method is not None:
        if method not in allowed:
            raise ValueError(f"mutation {name} does not apply to {method!r} (it applies to: {', '.join(allowed)})")
        allowed = (method,)
    if not allowed:
        raise ValueError(f"mutation {name} applies to no method of {source.name}")

    @st.composite
    def build(draw: Draw) -> MalformedCase:
        chosen = draw(st.sampled_from(allowed)) if len(allowed) > 1 else allowed[0]
        env = _Env(source, chosen, size)
        if mutation.base == "notification":
            base = draw(valid_notification(chosen, schema_source=source))
        elif mutation.base == "response":
            base = draw(valid_response(chosen, schema_source=source))
        elif mutation.base == "retry":
            request = draw(valid_request(chosen, schema_source=source))
            result = draw(
                input_required_result(
                    with_state=True if "requestState" in mutation.needs else None,
                    with_requests=True if "inputRequests" in mutation.needs else None,
                )
            )
            env = _Env(source, chosen, size, {"request": request, "input_required": result})
            base = draw(retry_for(request, result))
        else:
            base = draw(valid_request(chosen, schema_source=source))
        return _finish(mutation, env, base, mutation.apply(draw, base, env))

    return build()


def any_malformed_case(
    *,
    transport: str | None = None,
    names: Iterable[str] | None = None,
    schema_source: SchemaSource | None = None,
    size: int = 64 * 1024,
) -> st.SearchStrategy[MalformedCase]:
    """A case of any to-server mutation usable on `transport` (or of `names`)."""
    chosen = list(names) if names is not None else mutation_names(transport=transport)
    return st.one_of([malformed_case(n, schema_source=schema_source, size=size) for n in chosen])


__all__ = [
    "ANY",
    "AS_VALID",
    "CLIENT_REJECTS",
    "ERROR",
    "ERROR_OR_AS_VALID",
    "ERROR_OR_IGNORE",
    "ERROR_OR_INPUT_REQUIRED",
    "ERROR_OR_REFUSAL",
    "MUTATIONS",
    "NO_REPLY",
    "Expectation",
    "MalformedCase",
    "Mutation",
    "any_malformed_case",
    "base_methods",
    "catalogue",
    "get_mutation",
    "malformed_case",
    "malformed_retry",
    "mutation_names",
    "retry_mutations_for",
]

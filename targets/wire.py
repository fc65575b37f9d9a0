"""The wire codec: pure functions shared by the fuzzer, the load users and the reference server.

Everything that turns a Python value into bytes on the wire, or bytes back into a value, lives
here so that the three sides cannot drift apart: a header the harness sends is built by the same
code that the reference server uses to check it. Nothing here does I/O or imports asyncio or
gevent, which is what lets Locust users import it.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from mcp_tempest.targets import json_depth

# --- Protocol constants (DIGEST sections 2, 5, 7 and 14) ---

MODERN_VERSION: Final = "2026-07-28"
LEGACY_VERSION: Final = "2025-11-25"

META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
HEADER_MISMATCH: Final = -32020
MISSING_CLIENT_CAPABILITY: Final = -32021
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022

# The client requests of 2026-07-28, simplest first (a shrunk generated request lands on
# server/discover). The one hand-kept copy of what the schema source (mcp-types) defines:
# tests/test_method_lists.py checks it, and CACHEABLE / INPUT_REQUIRED below, against it; the
# oracle, the properties and the generators take their method lists from here. (Not read from
# mcp-types at import: `mcp_types.methods` costs seconds, and the oracle is on Locust's fast path.)
MODERN_METHODS: Final = (
    "server/discover",
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
    "tools/call",
    "resources/read",
    "prompts/get",
    "completion/complete",
    "subscriptions/listen",
)
INPUT_REQUIRED_METHODS: Final = frozenset({"tools/call", "resources/read", "prompts/get"})
CACHEABLE_METHODS: Final = frozenset(
    {"server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list",
     "resources/read"}
)
# Methods whose HTTP request carries `Mcp-Name`, and the params field it mirrors (DIGEST 7.2).
NAME_HEADER_FIELD: Final[Mapping[str, str]] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
}

HARNESS_CLIENT_INFO: Final[Mapping[str, str]] = {"name": "mcp-tempest", "version": "0.1.0"}

# --- Building messages ---


def request_meta(
    capabilities: Mapping[str, Any] | None = None,
    *,
    version: str = MODERN_VERSION,
    client_info: Mapping[str, Any] | None = HARNESS_CLIENT_INFO,
    log_level: str | None = None,
    progress_token: str | int | None = None,
) -> dict[str, Any]:
    """The `_meta` every 2026-07-28 request restates, since the server may not remember it."""
    meta: dict[str, Any] = {
        META_PROTOCOL_VERSION: version,
        META_CLIENT_CAPABILITIES: dict(capabilities) if capabilities is not None else {},
    }
    if client_info is not None:
        meta[META_CLIENT_INFO] = dict(client_info)
    if log_level is not None:
        meta[META_LOG_LEVEL] = log_level
    if progress_token is not None:
        meta["progressToken"] = progress_token
    return meta


def build_request(
    request_id: str | int,
    method: str,
    params: Mapping[str, Any] | None = None,
    *,
    capabilities: Mapping[str, Any] | None = None,
    version: str = MODERN_VERSION,
    client_info: Mapping[str, Any] | None = HARNESS_CLIENT_INFO,
    log_level: str | None = None,
    progress_token: str | int | None = None,
) -> dict[str, Any]:
    """A well-formed modern request; any `_meta` already in `params` wins over the defaults."""
    body: dict[str, Any] = dict(params or {})
    meta = request_meta(
        capabilities, version=version, client_info=client_info, log_level=log_level,
        progress_token=progress_token,
    )
    meta.update(body.get("_meta") or {})
    body["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body}


def build_notification(method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = dict(params)
    return msg


def build_result(request_id: str | int | None, result: Mapping[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def build_error(
    request_id: str | int | None, code: int, message: str, data: Any = None
) -> dict[str, Any]:
    """An error response; an unreadable id is omitted, the schema-strict form (DIGEST RPC-07)."""
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    msg: dict[str, Any] = {"jsonrpc": "2.0"}
    if request_id is not None:
        msg["id"] = request_id
    msg["error"] = err
    return msg


def legacy_initialize(request_id: str | int, version: str = LEGACY_VERSION) -> dict[str, Any]:
    """The 2025-11-25 handshake opener, used only by the era probe's fallback (DIGEST 5.3)."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": dict(HARNESS_CLIENT_INFO),
        },
    }


# --- Encoding and parsing ---


def dumps(msg: Any) -> bytes:
    return orjson.dumps(msg)


def encode_line(msg: Any) -> bytes:
    """One stdio frame. orjson escapes control characters, so no raw newline can leak in (STDIO-02)."""
    return orjson.dumps(msg) + b"\n"


class DecodeError(ValueError):
    """A frame that is not one JSON value; `reason` is short enough for a finding's title."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def loads(data: bytes | str) -> Any:
    """The JSON value `data` carries, of any depth: a message nested deeper than orjson writes is
    cut to `MAX_WRITTEN_DEPTH` (what was sent is in the raw bytes the caller keeps), one deeper
    than orjson reads is read by `parse_deep` and cut the same way. A correct message is never
    refused for its depth alone; what is not JSON is refused (DecodeError) whatever its depth."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if not str(exc).startswith(json_depth.ORJSON_DEPTH_REFUSAL):
            raise DecodeError(f"not JSON: {exc}") from None
        try:
            return json_depth.parse_deep(data)
        except json_depth.DeepJSONError as deep_exc:
            raise DecodeError(f"not JSON: {deep_exc}") from None
    return json_depth.cut_received(value, data)


def parse_line(line: bytes) -> Any:
    """Parse one stdio line (without or with its terminator) into a JSON value."""
    return loads(line.rstrip(b"\r\n"))


def is_request(msg: Any) -> bool:
    return isinstance(msg, dict) and "method" in msg and "id" in msg


def is_notification(msg: Any) -> bool:
    return isinstance(msg, dict) and "method" in msg and "id" not in msg


def is_response(msg: Any) -> bool:
    return isinstance(msg, dict) and "method" not in msg and ("result" in msg or "error" in msg)


def meta_of(msg: Any) -> dict[str, Any]:
    """The request's `params._meta`, or {} when any level is missing or of the wrong type."""
    if not isinstance(msg, dict):
        return {}
    params = msg.get("params")
    if not isinstance(params, dict):
        return {}
    meta = params.get("_meta")
    return meta if isinstance(meta, dict) else {}


def claims_modern_era(msg: Any) -> bool:
    """Whether a frame is a request or notification whose `_meta` names a 2026-07-28-or-later
    protocolVersion. Deliberately coarse (no check of the rest of the envelope): the stdio driver
    asks it of every frame a warm process was sent, so that a later case knows whether an earlier
    one may have opened the process in the 2025 era (a dual-era server may keep it there)."""
    if not isinstance(msg, dict) or not isinstance(msg.get("method"), str):
        return False
    version = meta_of(msg).get(META_PROTOCOL_VERSION)
    return isinstance(version, str) and version >= MODERN_VERSION


# --- HTTP headers (DIGEST 7.2, HDR-06) ---

_B64_PREFIX: Final = "=?base64?"
_B64_SUFFIX: Final = "?="
# Optional whitespace around a field value (RFC 9110 §5.5): not part of the value, so a
# receiver trims it before comparing; a value that really has it travels base64 (HDR-06).
OWS: Final = " \t"
_SAFE_HEADER_VALUE: Final = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?\Z")


def encode_header_value(value: str) -> str:
    """Plain safe ASCII travels as is; anything else, or a value that looks like the sentinel, is wrapped."""
    if (
        value
        and _SAFE_HEADER_VALUE.match(value)
        and not (value.startswith(_B64_PREFIX) and value.endswith(_B64_SUFFIX))
    ):
        return value
    return _B64_PREFIX + base64.b64encode(value.encode("utf-8")).decode("ascii") + _B64_SUFFIX


def decode_header_value(value: str) -> str:
    """Inverse of `encode_header_value`; raises ValueError on a malformed sentinel."""
    if value.startswith(_B64_PREFIX) and value.endswith(_B64_SUFFIX) and len(value) >= len(_B64_PREFIX) + 2:
        payload = value[len(_B64_PREFIX) : -len(_B64_SUFFIX)]
        try:
            return base64.b64decode(payload, validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            raise ValueError("malformed base64 sentinel") from None
    return value


def header_scalar(value: Any) -> str | None:
    """How a tool argument is written into an `Mcp-Param-*` header; None means omit the header."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    return None


def param_header_paths(input_schema: Any) -> dict[str, tuple[str, ...]]:
    """Header name -> property path for every `x-mcp-header` reachable only through `properties` (HDR-10)."""
    found: dict[str, tuple[str, ...]] = {}

    def walk(node: Any, path: tuple[str, ...]) -> None:
        if not isinstance(node, dict):
            return
        name = node.get("x-mcp-header")
        if path and isinstance(name, str) and name:
            found.setdefault(name, path)
        props = node.get("properties")
        if isinstance(props, dict):
            for key, sub in props.items():
                walk(sub, (*path, key))

    walk(input_schema, ())
    return found


def http_headers(
    msg: Any,
    *,
    input_schema: Mapping[str, Any] | None = None,
    accept: str = "application/json, text/event-stream",
) -> dict[str, str]:
    """The headers a conformant client sends with `msg` (DIGEST 7.2): they mirror the body."""
    headers = {"Content-Type": "application/json", "Accept": accept}
    if not isinstance(msg, dict):
        return headers
    version = meta_of(msg).get(META_PROTOCOL_VERSION)
    if isinstance(version, str):
        headers["MCP-Protocol-Version"] = version
    method = msg.get("method")
    if "id" in msg and isinstance(method, str):
        headers["Mcp-Method"] = method
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        field_name = NAME_HEADER_FIELD.get(method)
        if field_name and isinstance(params.get(field_name), str):
            headers["Mcp-Name"] = encode_header_value(params[field_name])
        if method == "tools/call" and input_schema is not None:
            args = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
            for header, path in param_header_paths(input_schema).items():
                value: Any = args
                for key in path:
                    value = value.get(key) if isinstance(value, dict) else None
                text = header_scalar(value)
                if text is not None:
                    headers[f"Mcp-Param-{header}"] = encode_header_value(text)
    return headers


# --- Server-Sent Events ---


@dataclass(slots=True)
class SseEvent:
    data: str
    event: str = "message"
    id: str | None = None


@dataclass(slots=True)
class SseParser:
    """Incremental SSE parser: feed bytes as they arrive, get whole events out.

    Incremental because a `subscriptions/listen` stream never ends, and the load users want the
    time of the first event, not of the last byte.
    """

    _buffer: bytes = b""
    _data: list[str] = field(default_factory=list)
    _event: str = ""
    _id: str | None = None

    def feed(self, chunk: bytes) -> list[SseEvent]:
        self._buffer += chunk
        out: list[SseEvent] = []
        while True:
            cut = _next_line_end(self._buffer)
            if cut is None:
                return out
            end, skip = cut
            line = self._buffer[:end].decode("utf-8", "replace")
            self._buffer = self._buffer[end + skip :]
            if not line:
                if self._data:
                    out.append(SseEvent("\n".join(self._data), self._event or "message", self._id))
                self._data, self._event = [], ""
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                self._data.append(value)
            elif name == "event":
                self._event = value
            elif name == "id":
                self._id = value

    def close(self) -> list[SseEvent]:
        """Flush an event the stream ended without a blank line for."""
        events = self.feed(b"\n\n") if self._buffer or self._data else []
        return events


def _next_line_end(buf: bytes) -> tuple[int, int] | None:
    """Position and width of the first line terminator (LF, CRLF or a lone CR), if complete."""
    lf, cr = buf.find(b"\n"), buf.find(b"\r")
    if cr == -1 or (lf != -1 and lf < cr):
        return (lf, 1) if lf != -1 else None
    if cr + 1 < len(buf):
        return cr, 2 if buf[cr + 1] == 0x0A else 1
    return None


def parse_sse(body: bytes) -> list[SseEvent]:
    parser = SseParser()
    return parser.feed(body) + parser.close()


def sse_messages(body: bytes) -> Iterator[Any]:
    """The JSON-RPC messages of a whole SSE body; a non-JSON data field raises DecodeError."""
    for event in parse_sse(body):
        if event.data.strip():
            yield loads(event.data)


def encode_sse(msg: Any, event_id: str | None = None) -> bytes:
    """One SSE event carrying one JSON-RPC message (orjson output has no raw newline)."""
    head = f"id: {event_id}\n".encode() if event_id is not None else b""
    return head + b"event: message\ndata: " + orjson.dumps(msg) + b"\n\n"


def response_messages(content_type: str | None, body: bytes) -> list[Any]:
    """The JSON-RPC messages of one HTTP response body, JSON or SSE (DIGEST HTTP-06)."""
    if not body.strip():
        return []
    ctype = (content_type or "").split(";", 1)[0].strip().lower()
    if ctype == "text/event-stream":
        return list(sse_messages(body))
    return [loads(body)]

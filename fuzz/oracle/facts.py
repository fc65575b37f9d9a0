"""Plain facts about single messages: what a sent frame is, what a server message is.

Every rule asks the same questions (is this id readable? which version did this request carry?
is this reply an error, and with which code?); answering them once, here, keeps the rules short
and keeps them agreeing with each other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, Literal

from mcp_tempest.targets import wire

FrameKind = Literal["request", "notification", "response", "invalid", "unparseable", "batch", "empty", "split",
                    "endpoint"]
ServerKind = Literal["result", "error", "notification", "request", "invalid"]

MODERN_METHODS: Final = frozenset(wire.MODERN_METHODS)
KNOWN_VERSIONS: Final = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"})
# Server capability that gates each method (DISC-07); discover and listen need none.
METHOD_CAPABILITY: Final = {
    "tools/list": "tools", "tools/call": "tools",
    "resources/list": "resources", "resources/templates/list": "resources", "resources/read": "resources",
    "prompts/list": "prompts", "prompts/get": "prompts",
    "completion/complete": "completions",
}
# The codes the spec lists for a rejected request (DIGEST 14): when a request has several
# defects, any of these may be the one the server reports first (DIGEST 2, last paragraph).
SPEC_REJECTION_CODES: Final = frozenset({
    wire.PARSE_ERROR, wire.INVALID_REQUEST, wire.METHOD_NOT_FOUND, wire.INVALID_PARAMS,
    wire.HEADER_MISMATCH, wire.MISSING_CLIENT_CAPABILITY, wire.UNSUPPORTED_PROTOCOL_VERSION,
})
_DATE: Final = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
_ABSENT: Final = object()


def valid_id(value: Any) -> bool:
    """A RequestId the schema allows: a string or an integer (RPC-03, RPC-04); bool is not an int here."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def id_key(value: Any) -> tuple[str, str]:
    """A hashable key that keeps 1, "1", 1.0 and True apart (ids match by value and type)."""
    return type(value).__name__, repr(value)


def same_id_value(a: Any, b: Any) -> bool:
    """JSON-RPC ids match by value and type: 1 and "1" differ, and so do 1 and True."""
    return type(a) is type(b) and a == b


def is_integer(value: Any) -> bool:
    """Integer in the JSON sense: 3 and 3.0 both are (a JSON number has no int/float split), True is not."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def is_modern_version(value: Any) -> bool:
    """VER-04: 2026-07-28 and later are the modern (stateless) era."""
    return isinstance(value, str) and bool(_DATE.match(value)) and value >= wire.MODERN_VERSION


def is_legacy_version(value: Any) -> bool:
    """A released handshake-era version (VER-04); an invented old date is just unsupported."""
    return isinstance(value, str) and value in KNOWN_VERSIONS and value < wire.MODERN_VERSION


@dataclass(frozen=True, slots=True)
class Sent:
    """A frame the harness wrote, classified once."""

    kind: FrameKind
    message: Any
    method: str | None
    has_id: bool
    id: Any
    envelope_ok: bool  # jsonrpc "2.0", a string method, params absent or an object, a valid id if any
    params: dict[str, Any] | None
    meta: dict[str, Any] | None  # None when params._meta is absent or not an object
    version: Any  # _ABSENT when the key is missing
    caps: Any  # _ABSENT when the key is missing
    legacy_context: bool = False  # sent as legacy-era traffic (initialize, or after it: VER-05)

    @property
    def id_readable(self) -> bool:
        return self.has_id and valid_id(self.id)

    @property
    def version_missing(self) -> bool:
        return self.version is _ABSENT

    @property
    def caps_missing(self) -> bool:
        return self.caps is _ABSENT

    @property
    def modern(self) -> bool:
        """Carries a modern protocolVersion: only then do the 2026-07-28 result rules apply (RT-05)."""
        return is_modern_version(self.version) and not self.legacy_context

    @property
    def legacy(self) -> bool:
        """Legacy-era traffic: a legacy version in _meta, or the initialize handshake and what a
        dual-era server then serves under legacy rules on that process or session (VER-05)."""
        return self.legacy_context or is_legacy_version(self.version)

    @property
    def malformed_in_every_era(self) -> bool:
        """A request or notification that no revision's schema accepts: `params` that is not an
        object, or `params._meta` that is not one (2025-11-25 and 2026-07-28 both type them as
        objects). Whichever era a dual-era server reads it in, the frame is invalid there, so its
        refusal is owed in every era (see `exchange.dual_era_excuses`). A bad logLevel or a missing
        protocolVersion is not such a frame: the 2025 `_meta` takes any key and needs none."""
        if self.kind not in ("request", "notification") or not isinstance(self.message, dict) \
                or "params" not in self.message:
            return False
        params = self.message["params"]
        return not isinstance(params, dict) or ("_meta" in params and not isinstance(params["_meta"], dict))

    @property
    def capabilities(self) -> dict[str, Any]:
        """The client capabilities THIS request declared ({} when absent or malformed)."""
        return self.caps if isinstance(self.caps, dict) else {}

    @property
    def well_formed_request(self) -> bool:
        """A request whose envelope and required _meta are fine: nothing forces an error on it."""
        return (
            self.kind == "request" and self.envelope_ok and isinstance(self.version, str)
            and isinstance(self.caps, dict)
        )


def classify_sent(message: Any, raw: bytes | None = None, *, line_framed: bool = False,
                  verb: str = "POST") -> Sent:
    """Classify a sent frame; `message` is None when the bytes were not one JSON value.

    With `line_framed` (stdio), a frame whose bytes hold a newline before their end is what the
    server sees: several lines, none of them this message (a raw newline is JSON whitespace, so
    the bytes may still parse as a whole). `verb` is the HTTP method it went with: anything but a
    POST (a GET or DELETE on the endpoint, DIGEST 7.4) carries no frame at all, however empty
    its body, so it is no empty line either (`endpoint`).
    """
    kind: FrameKind
    if verb != "POST":
        return Sent("endpoint", message, None, False, None, False, None, None, _ABSENT, _ABSENT)
    if line_framed and raw is not None and b"\n" in raw.rstrip(b"\r\n"):
        return Sent("split", message, None, False, None, False, None, None, _ABSENT, _ABSENT)
    if message is None:
        # Not one JSON value (or the JSON literal null, which is no message either).
        kind = "empty" if raw is not None and not raw.strip() else "unparseable"
        return Sent(kind, None, None, False, None, False, None, None, _ABSENT, _ABSENT)
    if isinstance(message, list):
        return Sent("batch", message, None, False, None, False, None, None, _ABSENT, _ABSENT)
    if not isinstance(message, dict):
        return Sent("invalid", message, None, False, None, False, None, None, _ABSENT, _ABSENT)
    method = message.get("method")
    has_id = "id" in message
    msg_id = message.get("id")
    params = message.get("params")
    params_ok = "params" not in message or isinstance(params, dict)
    envelope_ok = (
        message.get("jsonrpc") == "2.0" and isinstance(method, str) and params_ok
        and (not has_id or valid_id(msg_id))
    )
    if isinstance(method, str):
        kind = "request" if has_id else ("notification" if envelope_ok else "invalid")
    elif "result" in message or "error" in message:
        kind = "response"
    else:
        kind = "invalid"
    params_d = params if isinstance(params, dict) else None
    meta = params_d.get("_meta") if params_d is not None else None
    meta_d = meta if isinstance(meta, dict) else None
    version = meta_d.get(wire.META_PROTOCOL_VERSION, _ABSENT) if meta_d is not None else _ABSENT
    caps = meta_d.get(wire.META_CLIENT_CAPABILITIES, _ABSENT) if meta_d is not None else _ABSENT
    return Sent(
        kind, message, method if isinstance(method, str) else None, has_id, msg_id, envelope_ok,
        params_d, meta_d, version, caps,
    )


def frame_class(sent: Sent) -> str:
    """What kind of frame the server was given, in the words of a finding's behaviour.

    Two frames the server cannot serve may meet two code paths: bytes that are not JSON fail
    in its parser, valid JSON that is not a valid request fails in its dispatcher. A finding keeps
    them apart (each path is its own fix) and folds together every mutation within one class."""
    if sent.kind in ("split", "unparseable"):
        return "frame that is not JSON"
    if sent.kind == "empty":
        return "empty line"
    if sent.kind == "endpoint":
        return "request that is not a POST"
    if sent.kind == "batch":
        return "batch"
    if sent.kind == "response":
        return "response sent to the server"
    if sent.kind == "invalid" or not sent.envelope_ok:
        return "JSON that is not a valid request"
    if sent.kind == "notification":
        return "notification"
    return "request"


@dataclass(frozen=True, slots=True)
class Said:
    """A JSON value the server wrote, classified once."""

    kind: ServerKind
    message: Any
    has_id: bool
    id: Any

    @property
    def is_response(self) -> bool:
        return self.kind in ("result", "error")

    @property
    def result(self) -> Any:
        return self.message.get("result") if self.kind == "result" else None

    @property
    def error(self) -> Any:
        return self.message.get("error") if self.kind == "error" else None

    @property
    def code(self) -> int | None:
        """The error code when it is an integer (an integral float counts), else None."""
        err = self.error
        if isinstance(err, dict) and is_integer(err.get("code")):
            return int(err["code"])
        return None

    @property
    def result_type(self) -> Any:
        res = self.result
        return res.get("resultType", _ABSENT) if isinstance(res, dict) else _ABSENT

    @property
    def id_absent_or_null(self) -> bool:
        return not self.has_id or self.id is None


def classify_said(message: Any) -> Said:
    if not isinstance(message, dict):
        return Said("invalid", message, False, None)
    has_id = "id" in message
    msg_id = message.get("id")
    if isinstance(message.get("method"), str):
        return Said("request" if has_id else "notification", message, has_id, msg_id)
    has_result, has_error = "result" in message, "error" in message
    if has_result and not has_error:
        return Said("result", message, has_id, msg_id)
    if has_error and not has_result:
        return Said("error", message, has_id, msg_id)
    return Said("invalid", message, has_id, msg_id)


_VERB_NOTE: Final = re.compile(r"([A-Z]+) /")


def http_verb(note: str) -> str:
    """The HTTP method of a send the HTTP driver recorded (its note is "DELETE /mcp"); POST for
    any other note (a stdio send has none)."""
    found = _VERB_NOTE.match(note or "")
    return found.group(1) if found else "POST"


def is_absent(value: Any) -> bool:
    return value is _ABSENT


def header(headers: dict[str, str] | None, name: str) -> str | None:
    """Case-insensitive header lookup (header names are case-insensitive, DIGEST 7.2)."""
    if not headers:
        return None
    lname = name.lower()
    for key, value in headers.items():
        if key.lower() == lname:
            return value
    return None


def describe(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."

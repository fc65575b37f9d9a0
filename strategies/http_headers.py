"""The MCP request headers a conformant Streamable HTTP client sends for a frame (pure).

Why here and not in `targets/wire.py`: the malformed catalogue must state the exact headers
of each case (a header mutation is a change to them) and `strategies/` may not import the
drivers. When `targets/wire.py` grows the same helper, this module should delegate to it;
the base64 sentinel rule (HDR-06) must stay identical in both.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from strategies import protocol as p

_SENTINEL = re.compile(r"^=\?base64\?.*\?=$", re.DOTALL)


def needs_sentinel(value: str) -> bool:
    """HDR-06: non-ASCII, control characters, edge whitespace, or sentinel-shaped values."""
    if value != value.strip(" \t"):
        return True
    if any(ord(ch) < 0x20 or ord(ch) > 0x7E for ch in value):
        return True
    return bool(_SENTINEL.match(value))


def encode_header_value(value: str) -> str:
    """The header form of a body value: as is when plain safe ASCII, else `=?base64?...?=`."""
    if needs_sentinel(value):
        return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="
    return value


def decode_header_value(value: str) -> str | None:
    """Inverse of encode_header_value; None when a sentinel does not hold valid base64 UTF-8."""
    if _SENTINEL.match(value):
        body = value[len("=?base64?") : -len("?=")]
        try:
            return base64.b64decode(body, validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return None
    return value


def request_headers(frame: Any) -> dict[str, str]:
    """Content-Type, Accept, and the MCP headers derived from the frame's body (HDR-01..03).

    Derived only from members that have the right type; a malformed body yields fewer
    headers, never an exception. `Mcp-Param-*` headers need the tool's inputSchema and are
    added by `mcp_param_headers`.
    """
    headers = {p.H_CONTENT_TYPE: p.CONTENT_TYPE_VALUE, p.H_ACCEPT: p.ACCEPT_VALUE}
    if not isinstance(frame, dict):
        return headers
    params = frame.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(p.PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
    headers[p.H_PROTOCOL_VERSION] = version if isinstance(version, str) else p.REVISION
    method = frame.get("method")
    if isinstance(method, str) and "id" in frame:
        headers[p.H_METHOD] = encode_header_value(method)
        member = p.NAME_HEADER_SOURCE.get(method)
        value = params.get(member) if member and isinstance(params, dict) else None
        if isinstance(value, str):
            headers[p.H_NAME] = encode_header_value(value)
    return headers


def mcp_param_headers(input_schema: Any, arguments: Any) -> dict[str, str]:
    """`Mcp-Param-{Name}` headers for top-level properties marked `x-mcp-header` (HDR-08).

    Only direct `properties` count (HDR-10); a value that is absent or null gets no header.
    Integers and booleans are rendered as JSON renders them.
    """
    out: dict[str, str] = {}
    if not isinstance(input_schema, dict) or not isinstance(arguments, dict):
        return out
    for name, sub in (input_schema.get("properties") or {}).items():
        header = sub.get("x-mcp-header") if isinstance(sub, dict) else None
        if not isinstance(header, str) or name not in arguments or arguments[name] is None:
            continue
        value = arguments[name]
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (int, float)):
            text = str(int(value)) if float(value).is_integer() else repr(value)
        elif isinstance(value, str):
            text = value
        else:
            continue
        out[f"Mcp-Param-{header}"] = encode_header_value(text)
    return out

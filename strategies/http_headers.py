"""The MCP request headers a conformant Streamable HTTP client sends for a frame (pure).

Why this module: the malformed catalogue must state the exact headers of each case (a header
mutation is a change to them). The header rules themselves (which headers, the base64
sentinel of HDR-06, `Mcp-Param-*` from `x-mcp-header`) live in the shared wire codec,
`targets/wire.py`, so the harness, the load users and the reference server cannot drift apart;
this module only adapts it to what malformed cases need.
"""

from __future__ import annotations

from typing import Any

from mcp_tempest.strategies import protocol as p
from mcp_tempest.targets import wire


def encode_header_value(value: str) -> str:
    """The header form of a body value: as is when plain safe ASCII, else `=?base64?...?=`."""
    return wire.encode_header_value(value)


def decode_header_value(value: str) -> str | None:
    """Inverse of encode_header_value; None when a sentinel does not hold valid base64 UTF-8."""
    try:
        return wire.decode_header_value(value)
    except ValueError:
        return None


def request_headers(frame: Any) -> dict[str, str]:
    """`wire.http_headers(frame)`, plus `MCP-Protocol-Version` even when the body lacks a usable one.

    Why the addition: a malformed case breaks one thing. When the mutation removes or mistypes
    `_meta.protocolVersion`, the client still sends the header of the revision it speaks, so
    the server sees a body defect, not also a missing header (HDR-02).
    """
    headers = wire.http_headers(frame)
    headers.setdefault(p.H_PROTOCOL_VERSION, p.REVISION)
    return headers


def mcp_param_headers(input_schema: Any, arguments: Any) -> dict[str, str]:
    """`Mcp-Param-{Name}` headers for the tool's `x-mcp-header` properties present in `arguments` (HDR-08)."""
    if not isinstance(input_schema, dict) or not isinstance(arguments, dict):
        return {}
    frame = {"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": {"name": "", "arguments": arguments}}
    headers = wire.http_headers(frame, input_schema=input_schema)
    return {k: v for k, v in headers.items() if k.startswith("Mcp-Param-")}

"""Streamable HTTP header validation (DIGEST 7.2, 7.3): the headers must mirror the body.

Pure: takes the lower-cased header map and the parsed body, returns what is wrong (or None).
Decoding uses the same codec as the harness (`targets.wire`), so the base64 sentinel (HDR-06)
means the same thing on both sides.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_tempest.targets.wire import NAME_HEADER_FIELD, OWS, decode_header_value, header_scalar


def _printable(value: str) -> bool:
    return all(" " <= c <= "~" for c in value)


def _decoded(headers: Mapping[str, str], name: str) -> str:
    """The header's value after sentinel decoding; raises ValueError on bad characters or encoding."""
    raw = headers[name]
    if not _printable(raw):
        raise ValueError(f"{name} contains invalid characters")
    return decode_header_value(raw)


def _same_value(header_text: str, body_value: Any) -> bool:
    """Integers compare numerically, so `42.0` in a header equals 42 in the body (HDR-07)."""
    if isinstance(body_value, int | float) and not isinstance(body_value, bool):
        try:
            return float(header_text) == float(body_value)
        except ValueError:
            return False
    return header_text == header_scalar(body_value)


def header_problem(
    headers: Mapping[str, str],
    method: str,
    params: Mapping[str, Any],
    body_version: str,
    param_paths: Mapping[str, tuple[str, ...]] | None,
    *,
    trim_ows: bool = True,
) -> str | None:
    """Why the request's headers do not match its body (-32020), or None when they do.

    Optional whitespace around a value is not part of it (RFC 9110 §5.5), so it is trimmed before
    any comparison: `Mcp-Name:  echo ` names `echo`. (The HTTP parser drops the leading part, not
    the trailing one.) `trim_ows=False` is the `header-whitespace-refused` mutant.
    """
    if trim_ows:
        headers = {k: v.strip(OWS) for k, v in headers.items()}
    version = headers.get("mcp-protocol-version")
    if version is None:
        return "missing MCP-Protocol-Version header"
    if version != body_version:
        return "MCP-Protocol-Version header does not match _meta protocolVersion"
    sent_method = headers.get("mcp-method")
    if sent_method is None:
        return "missing Mcp-Method header"
    if sent_method != method:
        return "Mcp-Method header does not match the body method"
    field = NAME_HEADER_FIELD.get(method)
    if field is not None and isinstance(params.get(field), str):
        if "mcp-name" not in headers:
            return "missing Mcp-Name header"
        try:
            if _decoded(headers, "mcp-name") != params[field]:
                return f"Mcp-Name header does not match params.{field}"
        except ValueError as exc:
            return f"Mcp-Name header is malformed: {exc}"
    if param_paths:
        args = params.get("arguments")
        args = args if isinstance(args, dict) else {}
        for header, path in param_paths.items():
            value: Any = args
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            wire_name = "mcp-param-" + header.lower()
            expected = header_scalar(value)
            if expected is None:
                if wire_name in headers:
                    return f"Mcp-Param-{header} header sent for an absent argument"
                continue
            if wire_name not in headers:
                return f"missing Mcp-Param-{header} header"
            try:
                if not _same_value(_decoded(headers, wire_name), value):
                    return f"Mcp-Param-{header} header does not match the argument"
            except ValueError as exc:
                return f"Mcp-Param-{header} header is malformed: {exc}"
    return None

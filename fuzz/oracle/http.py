"""DIGEST section 7: Streamable HTTP (HTTP-*, HDR-*) and SL-10 (no session ids).

Header defects are read from the request headers the driver recorded on the `send` event, with
the same codec the harness used to write them (`targets.wire`), so a mirrored header is judged
exactly as a conformant server must judge it: names case-insensitive, values case-sensitive,
optional whitespace trimmed, the base64 sentinel decoded (HDR-06).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from mcp_tempest.fuzz.oracle.exchange import Exchange, Pair
from mcp_tempest.fuzz.oracle.facts import SPEC_REJECTION_CODES, describe, header
from mcp_tempest.fuzz.oracle.model import BOTH_ERAS, Violation, rule
from mcp_tempest.targets import wire

_VISIBLE_ASCII: Final = re.compile(r"[\x20-\x7e]*\Z")
_OWS: Final = wire.OWS


@dataclass(frozen=True, slots=True)
class HeaderDefect:
    rule: str  # HDR-01, HDR-02 or HDR-03
    text: str


def header_defects(pair: Pair) -> list[HeaderDefect]:
    """What is wrong with the MCP headers of an HTTP request, judged against its body (DIGEST 7.2/7.3).

    A missing MCP-Protocol-Version is deliberately not a defect here: HDR-02's exception lets a
    server that serves pre-2025-06-18 clients read it as 2025-03-26, so the outcome is open.
    """
    sent = pair.sent
    headers = pair.headers
    if headers is None or sent.kind != "request" or sent.method is None:
        return []
    out: list[HeaderDefect] = []
    version = header(headers, "MCP-Protocol-Version")
    if version is not None:
        value = version.strip(_OWS)
        if not _VISIBLE_ASCII.match(value):
            out.append(HeaderDefect("HDR-03", "MCP-Protocol-Version has invalid characters"))
        elif isinstance(sent.version, str) and value != sent.version:
            out.append(HeaderDefect("HDR-01", f"MCP-Protocol-Version {value!r} differs from body {sent.version!r}"))
    method = header(headers, "Mcp-Method")
    if method is None:
        out.append(HeaderDefect("HDR-02", "Mcp-Method header missing"))
    elif not _VISIBLE_ASCII.match(method.strip(_OWS)):
        out.append(HeaderDefect("HDR-03", "Mcp-Method has invalid characters"))
    elif method.strip(_OWS) != sent.method:
        out.append(HeaderDefect("HDR-03", f"Mcp-Method {method.strip(_OWS)!r} differs from body {sent.method!r}"))
    field = wire.NAME_HEADER_FIELD.get(sent.method)
    body_name = sent.params.get(field) if field and sent.params is not None else None
    if field and isinstance(body_name, str):
        name = header(headers, "Mcp-Name")
        if name is None:
            out.append(HeaderDefect("HDR-02", "Mcp-Name header missing"))
        elif not _VISIBLE_ASCII.match(name.strip(_OWS)):
            out.append(HeaderDefect("HDR-03", "Mcp-Name has invalid characters"))
        else:
            try:
                decoded = wire.decode_header_value(name.strip(_OWS))
            except ValueError:
                out.append(HeaderDefect("HDR-03", "Mcp-Name carries a malformed base64 sentinel"))
            else:
                if decoded != body_name:
                    out.append(HeaderDefect("HDR-03", f"Mcp-Name {describe(decoded)} differs from body {describe(body_name)}"))
    return out


def padded_values(pair: Pair) -> list[str]:
    """The mirrored headers of a request whose values carry optional whitespace (RFC 9110 §5.5).

    Only when the oracle can vouch for every mirrored header: the body names its version, the
    version header is there, and no `Mcp-Param-*` header is sent (whether those match depends on
    the tool's schema, which a transcript does not hold). Then a -32020 can only be about the padding.
    """
    headers = pair.headers
    if headers is None or not isinstance(pair.sent.version, str) or header(headers, "MCP-Protocol-Version") is None:
        return []
    if any(name.lower().startswith("mcp-param-") for name in headers):
        return []
    out = []
    for name in ("MCP-Protocol-Version", "Mcp-Method", "Mcp-Name"):
        value = header(headers, name)
        if value is not None and value != value.strip(_OWS):
            out.append(name)
    return out


def _judge_defect(x: Exchange, rule_id: str) -> list[Violation]:
    """A request with a header defect must be rejected: 400 with -32020, or another listed error
    matching another defect it may also have (DIGEST 2, last paragraph)."""
    if not x.transport.http_semantics:
        return []
    out: list[Violation] = []
    for pair in x.pairs:
        if pair.sent.legacy:
            continue
        mine = [d for d in header_defects(pair) if d.rule == rule_id]
        if not mine:
            continue
        what = "; ".join(d.text for d in mine)
        for i, said in x.answers(pair):
            status = x.events[i].status
            if said.kind == "result":
                out.append(Violation(rule_id, "MUST", "request with a header defect was served", what, pair.method, i))
            elif said.kind == "error":
                code = said.code
                if code not in SPEC_REJECTION_CODES:
                    out.append(Violation(rule_id, "MUST", f"header defect answered with error {code}",
                                         f"{what}; expected -32020 (or another listed error)", pair.method, i))
                elif code == wire.HEADER_MISMATCH and status is not None and status != 400:
                    out.append(Violation(rule_id, "MUST", f"-32020 sent with HTTP {status}, not 400", what, pair.method, i))
        for i in pair.http:
            status = x.events[i].status
            if status is not None and 200 <= status < 300:
                out.append(Violation(rule_id, "MUST", f"header defect answered with HTTP {status}", what, pair.method, i))
    return out


@rule("HDR-01", "MUST", "a MCP-Protocol-Version header that differs from the body gets 400 and -32020")
def hdr_01(x: Exchange) -> list[Violation]:
    return _judge_defect(x, "HDR-01")


@rule("HDR-02", "MUST", "a missing Mcp-Method or Mcp-Name header gets 400 and -32020")
def hdr_02(x: Exchange) -> list[Violation]:
    return _judge_defect(x, "HDR-02")


@rule("HDR-03", "MUST", "a header differing from the body or with invalid characters gets 400 and -32020; "
      "-32020 always comes with 400; a value matching once its optional whitespace is trimmed is not refused")
def hdr_03(x: Exchange) -> list[Violation]:
    out = _judge_defect(x, "HDR-03")
    if not x.transport.http_semantics:
        return out
    for pair in x.pairs:
        if pair.sent.legacy or header_defects(pair):
            continue  # the defect rules above judge the status of those
        padded = padded_values(pair)
        for i, said in x.answers(pair):
            status = x.events[i].status
            if said.code == wire.HEADER_MISMATCH and padded:
                out.append(Violation("HDR-03", "MUST", "header values with optional whitespace refused with -32020",
                                     f"{', '.join(padded)} match the body once the spaces and tabs around them "
                                     "are trimmed, as RFC 9110 §5.5 has a server do", pair.method, i))
                continue
            if said.code == wire.HEADER_MISMATCH and status is not None and status != 400:
                out.append(Violation("HDR-03", "MUST", f"-32020 sent with HTTP {status}, not 400",
                                     "DIGEST 7.5: a header error is 400", pair.method, i))
    return out


@rule("HDR-05", "MUST", "an unknown method gets 404 with JSON-RPC -32601")
def hdr_05(x: Exchange) -> list[Violation]:
    if not x.transport.http_semantics:
        return []
    out: list[Violation] = []
    for pair in x.pairs:
        if pair.sent.legacy:
            continue
        for i, said in x.answers(pair):
            status = x.events[i].status
            if said.code == wire.METHOD_NOT_FOUND and status is not None and status != 404:
                out.append(Violation("HDR-05", "MUST", f"-32601 sent with HTTP {status}, not 404",
                                     "the JSON body and 404 together tell a modern server from a legacy one",
                                     pair.method, i))
    return out


@rule("HTTP-05", "MUST", "an accepted notification gets 202 with an empty body; a rejected one an HTTP error",
      eras=BOTH_ERAS)
def http_05(x: Exchange) -> list[Violation]:
    if not x.transport.http_semantics:
        return []
    out: list[Violation] = []
    for pair in x.pairs:
        if pair.sent.kind != "notification":
            continue
        for i in (*pair.responses, *pair.stream, *pair.http):
            event = x.events[i]
            status = event.status
            if status is None or event.kind not in ("recv", "http", "noise"):
                continue
            if status == 202:
                if event.kind != "http" or (event.raw or b"").strip():
                    out.append(Violation("HTTP-05", "MUST", "202 for a notification carries a body",
                                         describe(event.message if event.kind == "recv" else event.raw),
                                         pair.method, i))
            elif status < 400:
                out.append(Violation("HTTP-05", "MUST", f"notification answered with HTTP {status}",
                                     "accepted: 202 with an empty body; rejected: an HTTP error status",
                                     pair.method, i))
    return out


def _content_type(headers: dict[str, str] | None) -> str | None:
    value = header(headers, "Content-Type")
    return value.split(";", 1)[0].strip().lower() if value is not None else None


@rule("HTTP-06", "MUST", "a successful request response is application/json or text/event-stream", eras=BOTH_ERAS)
def http_06(x: Exchange) -> list[Violation]:
    if not x.transport.http_semantics:
        return []
    out: list[Violation] = []
    for pair in x.pairs:
        if pair.sent.kind != "request":
            continue
        for i in pair.responses[:1]:
            event = x.events[i]
            if event.status is None or not 200 <= event.status < 300 or event.headers is None:
                continue
            ctype = _content_type(event.headers)
            if ctype not in ("application/json", "text/event-stream"):
                out.append(Violation("HTTP-06", "MUST", f"response Content-Type is {ctype or 'missing'}",
                                     "a request is answered with application/json or text/event-stream",
                                     pair.method, i))
    return out


@rule("HTTP-09", "SHOULD", "an SSE response sends X-Accel-Buffering: no")
def http_09(x: Exchange) -> list[Violation]:
    if not x.transport.http_semantics:
        return []
    out: list[Violation] = []
    for pair in x.pairs:
        if pair.sent.legacy:
            continue
        first = (pair.responses or pair.stream)[:1]
        for i in first:
            headers = x.events[i].headers
            if _content_type(headers) == "text/event-stream":
                value = header(headers, "X-Accel-Buffering")
                if value is None or value.strip().lower() != "no":
                    out.append(Violation("HTTP-09", "SHOULD", "SSE response without X-Accel-Buffering: no",
                                         f"X-Accel-Buffering is {describe(value)}", pair.method, i))
    return out


@rule("SL-10", "SHOULD", "no Mcp-Session-Id is minted or echoed over HTTP")
def sl_10(x: Exchange) -> list[Violation]:
    if not x.transport.http_semantics:
        return []
    out: list[Violation] = []
    for pair in x.pairs:
        if pair.sent.legacy:
            continue
        for i in (*pair.responses, *pair.stream, *pair.http):
            value = header(x.events[i].headers, "Mcp-Session-Id")
            if value is not None:
                echoed = header(pair.headers, "Mcp-Session-Id") is not None
                out.append(Violation("SL-10", "SHOULD", "response carries Mcp-Session-Id",
                                     f"{'echoed' if echoed else 'minted'} session id {describe(value)}",
                                     pair.method, i))
                break
    return out

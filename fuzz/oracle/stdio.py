"""DIGEST section 6: the stdio transport (STDIO-*) and RPC-02 (UTF-8) on stdout."""

from __future__ import annotations

from typing import Final

import orjson

from mcp_tempest.fuzz.oracle.exchange import Exchange
from mcp_tempest.fuzz.oracle.facts import describe
from mcp_tempest.fuzz.oracle.model import BOTH_ERAS, Violation, rule

MAX_PER_PROCESS: Final = 3  # one noisy server must not bury the report: first few lines, then a count
_UTF8_TAIL: Final = 3  # a kept prefix may cut one multi-byte character in half


def _bad_utf8(raw: bytes, truncated: bool) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return not truncated or exc.start < len(raw) - _UTF8_TAIL
    return False


def _multiline_messages(x: Exchange) -> dict[int, int]:
    """Noise lines that together are one JSON-RPC message split by raw newlines: line -> first line."""
    found: dict[int, int] = {}
    runs: dict[int, list[int]] = {}

    def close(proc: int) -> None:
        run = runs.pop(proc, [])
        if len(run) < 2:
            return
        joined = b"\n".join(x.events[j].raw or b"" for j in run)
        try:
            value = orjson.loads(joined)
        except orjson.JSONDecodeError:
            return
        if isinstance(value, dict) and value.get("jsonrpc") == "2.0":
            for j in run:
                found[j] = run[0]

    for i, event in enumerate(x.events):
        if event.kind == "noise" or (event.kind == "recv" and not isinstance(event.message, dict)):
            runs.setdefault(event.proc, []).append(i)
        elif event.kind in ("recv", "oversize", "closed", "exit"):
            close(event.proc)
    for proc in list(runs):
        close(proc)
    return found


@rule("STDIO-02", "MUST", "a message contains no embedded newline", eras=BOTH_ERAS, scope="transcript")
def stdio_02(x: Exchange) -> list[Violation]:
    if not x.transport.line_framed:
        return []
    firsts = sorted(set(_multiline_messages(x).values()))
    return [
        Violation("STDIO-02", "MUST", "JSON-RPC message split over several stdout lines",
                  f"starts with {describe(x.events[i].raw)}", None, i)
        for i in firsts
    ]


@rule("STDIO-03", "MUST", "stdout carries only MCP messages (no banners, no logs)", eras=BOTH_ERAS,
      scope="transcript")
def stdio_03(x: Exchange) -> list[Violation]:
    if not x.transport.line_framed:
        return []
    multiline = _multiline_messages(x)
    batch_procs = {p.proc for p in x.pairs if p.sent.kind == "batch"}
    offenders: dict[int, list[tuple[int, str]]] = {}
    for i, event in enumerate(x.events):
        if i in multiline:
            continue
        if event.kind == "noise":
            raw = event.raw or b""
            if not raw.strip():
                continue  # a blank line carries nothing a client could misread
            if _bad_utf8(raw, "kept" in event.note):
                continue  # RPC-02 reports it
            offenders.setdefault(event.proc, []).append((i, f"non-JSON line {describe(raw)}"))
        elif event.kind == "recv":
            msg = event.message
            if isinstance(msg, list) and event.proc in batch_procs:
                continue  # a reply to a batch is UNSPEC (RPC-11)
            if not isinstance(msg, dict) or ("jsonrpc" not in msg and x.said[i].kind == "invalid"):
                offenders.setdefault(event.proc, []).append((i, f"JSON that is no MCP message {describe(msg)}"))
    out: list[Violation] = []
    for lines in offenders.values():
        for i, what in lines[:MAX_PER_PROCESS]:
            extra = f" ({len(lines)} such lines on this process)" if len(lines) > MAX_PER_PROCESS else ""
            out.append(Violation("STDIO-03", "MUST", "stdout carries something that is not an MCP message",
                                 what + extra, None, i))
    return out


@rule("RPC-02", "MUST", "messages are UTF-8", eras=BOTH_ERAS, scope="transcript")
def rpc_02(x: Exchange) -> list[Violation]:
    if not x.transport.line_framed:
        return []
    return [
        Violation("RPC-02", "MUST", "stdout line is not valid UTF-8", describe(event.raw), None, i)
        for i, event in enumerate(x.events)
        if event.kind == "noise" and event.raw and event.raw.strip()
        and _bad_utf8(event.raw, "kept" in event.note)
    ]

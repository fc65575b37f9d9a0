"""Build small transcripts by hand: for the oracle's own tests, for other helpers' tests, and for
turning a single request/response seen elsewhere (a log, a bug report) into something `judge` takes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_tempest.targets import wire
from mcp_tempest.targets.transcript import Event, Transcript
from mcp_tempest.targets.transports import transport_named


class Crafter:
    """Appends events with consistent `proc`, `ref` and raw bytes; indices are returned for expectations."""

    def __init__(self, transport: str = "stdio", target: str = "crafted") -> None:
        self.transcript = Transcript(target, transport_named(transport))  # ValueError for an unknown name
        self.proc = 0
        self._t = 0.0

    @property
    def http(self) -> bool:
        return self.transcript.transport.http_semantics

    def _add(self, kind: str, **fields: Any) -> int:
        self._t += 0.001
        fields.setdefault("proc", self.proc)
        self.transcript.events.append(Event(kind, self._t, **fields))  # type: ignore[arg-type]
        return len(self.transcript.events) - 1

    def pause(self, seconds: float) -> None:
        """Let time pass before the next event (each event is otherwise 1 ms after the last)."""
        self._t += seconds

    def spawn(self, note: str = "crafted") -> int:
        procs = [e.proc for e in self.transcript.events if e.kind == "spawn"]
        self.proc = max(procs) + 1 if procs else 0
        return self._add("spawn", note=note)

    def send(self, message: Any = None, *, raw: bytes | None = None, headers: Mapping[str, str] | None = None,
             mirror_headers: bool = True, note: str = "") -> int:
        """A frame the harness wrote. Over HTTP the conformant headers are added unless given; `note`
        is the HTTP driver's ("DELETE /mcp" for a request that is not a POST)."""
        if raw is None:
            raw = wire.encode_line(message) if not self.http else wire.dumps(message)
        hdrs: dict[str, str] | None = None
        if self.http:
            hdrs = dict(headers) if headers is not None else (wire.http_headers(message) if mirror_headers else {})
        return self._add("send", message=message, raw=raw, headers=hdrs, note=note)

    def recv(self, message: Any, *, ref: int | None = None, status: int | None = None,
             headers: Mapping[str, str] | None = None, raw: bytes | None = None) -> int:
        """A JSON value the server wrote; over HTTP `ref` is the send it answers (default: the last send)."""
        if raw is None:
            raw = wire.dumps(message)
        if self.http:
            if ref is None:
                ref = max(i for i, e in enumerate(self.transcript.events) if e.kind == "send")
            if status is None:
                status = 200
            if headers is None:
                headers = {"Content-Type": "application/json"}
        return self._add("recv", message=message, raw=raw, ref=ref, status=status,
                         headers=dict(headers) if headers is not None else None)

    def http_reply(self, status: int, *, ref: int | None = None, body: bytes = b"",
                   headers: Mapping[str, str] | None = None) -> int:
        if ref is None:
            ref = max(i for i, e in enumerate(self.transcript.events) if e.kind == "send")
        return self._add("http", status=status, raw=body, ref=ref, headers=dict(headers or {}))

    def noise(self, raw: bytes, note: str = "not JSON") -> int:
        return self._add("noise", raw=raw, note=note)

    def oversize(self, head: bytes, note: str = "50000230 bytes (cap 16777216)") -> int:
        """A line over the driver's cap: discarded as it arrived, only its head kept."""
        return self._add("oversize", raw=head, note=note)

    def timeout(self, note: str = "", ref: int | None = None) -> int:
        """Nothing came in time for the send `ref` (default: the last send on this process), as drivers record it."""
        if ref is None:
            ref = max((i for i, e in enumerate(self.transcript.events) if e.kind == "send" and e.proc == self.proc),
                      default=None)
        return self._add("timeout", note=note, ref=ref)

    def closed(self) -> int:
        return self._add("closed", note="stdout closed")

    def exit(self, status: int = 0, note: str = "exited after stdin was closed") -> int:
        return self._add("exit", status=status, note=note)

    def exchange(self, request: Any, response: Any, **recv_fields: Any) -> tuple[int, int]:
        """Send `request` and record `response` as its answer; (send index, recv index)."""
        s = self.send(request)
        r = self.recv(response, ref=s if self.http else None, **recv_fields)
        return s, r


def result_response(request: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
    return wire.build_result(request["id"], dict(result))

"""The driver contract both transports honour, so properties are written once for stdio and HTTP.

A Connection is synchronous (Hypothesis properties are sync and Locust's gevent must never meet
asyncio) and records every exchange into the Transcript it was opened with: the oracle judges
the transcript, not what a method returned.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Final

from mcp_tempest.targets import wire
from mcp_tempest.targets.transcript import Event, EventKind, Transcript
from mcp_tempest.targets.transports import Transport

DEFAULT_TIMEOUT: Final = 10.0
DEFAULT_LINE_CAP: Final = 16 * 1024 * 1024
NOISE_KEEP_BYTES: Final = 4096

Frame = dict[str, Any] | bytes
Predicate = Callable[[Event], bool]


def next_proc(transcript: Transcript) -> int:
    """The process number a newly started process gets in `transcript` (0, 1, ...)."""
    spawned = [e.proc for e in transcript.events if e.kind == "spawn"]
    return max(spawned) + 1 if spawned else 0


def same_id(a: Any, b: Any) -> bool:
    """JSON-RPC ids match by value and type (1 and "1" differ, so do 1 and True)."""
    return type(a) is type(b) and a == b


def is_response_to(event: Event, request_id: Any) -> bool:
    msg = event.message
    return (
        event.kind == "recv"
        and wire.is_response(msg)
        and "id" in msg
        and same_id(msg["id"], request_id)
    )


def frame_bytes_and_message(frame: Frame | None) -> tuple[bytes, Any]:
    """Bytes to put on the wire and the JSON value they carry (None when they are not one JSON value)."""
    if frame is None:
        return b"", None
    if isinstance(frame, bytes | bytearray | memoryview):
        raw = bytes(frame)
        try:
            return raw, wire.parse_line(raw)
        except wire.DecodeError:
            return raw, None
    return wire.dumps(frame), frame


class Connection(ABC):
    """One way of talking to a target, bound to one Transcript.

    - `send` records a `send` event and returns its index (HTTP: after the response is recorded).
    - `request` sends and returns the response carrying the same id, or None.
    - `read_until` / `drain` wait for what the server says next.
    - `close` ends it; for stdio that reaps the process and records `exit` and `stderr`.
    """

    transport: Transport

    def __init__(self, transcript: Transcript, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.transcript = transcript
        self.timeout = timeout
        self._procs: set[int] = set()
        self._cond = threading.Condition()
        self._last_send: int | None = None
        self._first_event = len(transcript.events)

    # --- recording ---

    def _record(self, kind: EventKind, **fields: Any) -> int:
        index = self.transcript.add(kind, **fields)
        self._procs.add(fields.get("proc", 0))
        with self._cond:
            self._cond.notify_all()
        return index

    def mine(self, event: Event) -> bool:
        """Whether `event` came from (or went to) a process this connection talks to."""
        return event.proc in self._procs

    # --- the contract ---

    @abstractmethod
    def send(self, frame: Frame, *, headers: dict[str, str] | None = None) -> int:
        """Write one frame (a dict is encoded; bytes go out exactly as given); the send event's index."""

    def send_concurrently(
        self,
        frames: Sequence[Frame],
        *,
        headers: Sequence[dict[str, str] | None] | None = None,
        timeout: float | None = None,
    ) -> list[int]:
        """Put several frames in flight at once; their send indices, in the order given."""
        return [
            self.send(frame, headers=headers[i] if headers else None) for i, frame in enumerate(frames)
        ]

    def request(
        self, msg: dict[str, Any], *, timeout: float | None = None, headers: dict[str, str] | None = None
    ) -> dict[str, Any] | None:
        """Send `msg` and return the response with its id (None on timeout, death or a missing reply)."""
        index = self.send(msg, headers=headers)
        if not isinstance(msg, dict) or "id" not in msg:
            return None
        want = msg["id"]
        event = self.read_until(
            lambda e: is_response_to(e, want), self.timeout if timeout is None else timeout,
            since=index, awaited=f"response to id {want!r}",
        )
        return event.message if event is not None else None

    @abstractmethod
    def read_until(
        self, predicate: Predicate, timeout: float, *, since: int | None = None, awaited: str = ""
    ) -> Event | None:
        """The first event of this connection at index >= `since` (default: its last send) matching
        `predicate`, waiting up to `timeout`; None (and a `timeout` event) if none came, or None
        when the server can no longer say anything (stdout closed)."""

    @abstractmethod
    def drain(self, quiet: float = 0.2, timeout: float = 2.0) -> list[Event]:
        """Collect what arrives until nothing came for `quiet` seconds or `timeout` passed."""

    @abstractmethod
    def alive(self) -> bool:
        """Whether the server can still answer (stdio: process running and stdout open)."""

    @abstractmethod
    def close(self) -> None:
        """End the connection; idempotent."""

    def events_for(self, send_index: int) -> list[Event]:
        """What answered the frame at `send_index`: over HTTP every event that refs it (recv, http,
        noise, timeout, error); over stdio the responses with its id."""
        if self.transport.pairs_by_request:
            return [e for e in self.transcript.events if e.ref == send_index]
        return self.transcript.responses_to(send_index)

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- helpers for subclasses ---

    def _scan(self, predicate: Predicate, start: int) -> tuple[Event | None, int]:
        events = self.transcript.events
        end = len(events)
        for i in range(start, end):
            event = events[i]
            if self.mine(event) and predicate(event):
                return event, end
        return None, end

    def _start_index(self, since: int | None) -> int:
        if since is not None:
            return since
        return self._last_send if self._last_send is not None else self._first_event

    @staticmethod
    def _deadline(timeout: float) -> float:
        return time.monotonic() + max(timeout, 0.0)

"""HTTP connections whose reads honour one total deadline, and bounded body reads.

Why: a socket timeout restarts with every byte, so a server that sends its headers one byte every
0.5 s keeps `http.client` waiting forever under a 5 s timeout. Here every `recv` is given only
the time left until the exchange's deadline, so headers, bodies and streams all end on time.
And why bounded reads: `response.read()` of an endless chunked body grows without limit; every
read of a body the harness does not parse incrementally goes through `read_capped`.
"""

from __future__ import annotations

import http.client
import io
import math
import socket
import ssl
import time
from typing import Any, Final

DEFAULT_BODY_CAP: Final = 16 * 1024 * 1024


class DeadlinePassed(TimeoutError):
    """The exchange's total deadline passed while reading (not a per-byte idle timeout)."""


class BodyTooLarge(http.client.HTTPException):
    """A body read with `read_capped` went over its cap; what was read is thrown away."""

    def __init__(self, cap: int) -> None:
        super().__init__(f"body over the cap of {cap} bytes")
        self.cap = cap


class _DeadlineReader(io.RawIOBase):
    """What `sock.makefile("rb")` returns: each read gets only the time left until the deadline,
    and the header part of a response is capped in bytes."""

    def __init__(self, sock: socket.socket, owner: _DeadlineMixin) -> None:
        self._sock = sock
        self._owner = owner
        # As socket.makefile does: while this reader is open, closing the socket (http.client
        # closes its connection as soon as a response says "will close") must not close the fd
        # under a body still to be read (that raced into EBADF on HTTP/1.0 servers).
        sock._io_refs += 1  # type: ignore[attr-defined]

    def close(self) -> None:
        if not self.closed:
            self._sock._decref_socketios()  # type: ignore[attr-defined]
        super().close()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        remaining = self._owner.deadline - time.monotonic()
        if remaining <= 0:
            raise DeadlinePassed("the deadline passed")
        self._sock.settimeout(min(remaining, 3600.0))
        try:
            return self._sock.recv_into(buffer)
        except TimeoutError:
            raise DeadlinePassed("the deadline passed") from None


class _DeadlineSocket:
    """A socket proxy that hands `http.client` a deadline-aware reader instead of a plain file."""

    def __init__(self, sock: socket.socket, owner: _DeadlineMixin) -> None:
        self._sock = sock
        self._owner = owner

    def makefile(self, mode: str = "r", *args: Any, **kwargs: Any) -> io.BufferedReader:
        if "r" not in mode:  # pragma: no cover - http.client only reads through makefile
            return self._sock.makefile(mode, *args, **kwargs)
        return io.BufferedReader(_DeadlineReader(self._sock, self._owner))

    def sendall(self, data: Any, *args: Any) -> None:
        remaining = self._owner.deadline - time.monotonic()
        if remaining <= 0:
            raise DeadlinePassed("the deadline passed before the request was sent")
        self._sock.settimeout(min(remaining, 3600.0))  # sendall's timeout is a total (3.5+)
        self._sock.sendall(data, *args)

    @property
    def raw(self) -> socket.socket:
        return self._sock

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class _DeadlineMixin:
    """Set `deadline` (time.monotonic() based) before each exchange; connect and every read obey it."""

    deadline: float = math.inf
    sock: Any
    timeout: Any

    def set_deadline(self, deadline: float) -> None:
        self.deadline = deadline
        self.timeout = max(min(deadline - time.monotonic(), 3600.0), 0.001)

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        self.sock = _DeadlineSocket(self.sock, self)


class DeadlineHTTPConnection(_DeadlineMixin, http.client.HTTPConnection):
    pass


class DeadlineHTTPSConnection(_DeadlineMixin, http.client.HTTPSConnection):
    pass


def deadline_connection(scheme: str, host: str, port: int, deadline: float) -> http.client.HTTPConnection:
    """A not yet connected HTTP(S) connection whose every step ends by `deadline`."""
    conn: DeadlineHTTPConnection | DeadlineHTTPSConnection
    if scheme == "https":
        conn = DeadlineHTTPSConnection(host, port, context=ssl.create_default_context())
    else:
        conn = DeadlineHTTPConnection(host, port)
    conn.set_deadline(deadline)
    return conn


def read_capped(response: http.client.HTTPResponse, cap: int = DEFAULT_BODY_CAP) -> bytes:
    """The whole body, or BodyTooLarge once more than `cap` bytes arrived (endless bodies end here)."""
    body = bytearray()
    while True:
        chunk = response.read1(64 * 1024)
        if not chunk:
            return bytes(body)
        body += chunk
        if len(body) > cap:
            raise BodyTooLarge(cap)
        if response.length == 0:
            return bytes(body)

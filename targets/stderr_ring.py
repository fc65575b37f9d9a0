"""What servers write to stderr, kept as a bounded ring in memory and read by one thread.

Why not a temporary file: a server that writes a lot of stderr filled 2.7 GB of disk in one
50-example run. Why one thread for all of them: a pipe must be drained or the server blocks on
its next write, and one reader per process would be one thread per process. The harness only
ever shows the tail, so only the last `RING_BYTES` are kept; everything before is counted.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import threading
from typing import Final

RING_BYTES: Final = 64 * 1024
_READ: Final = 64 * 1024


class StderrRing:
    """The last `cap` bytes written to one pipe, plus how many bytes came in all."""

    def __init__(self, fd: int, cap: int = RING_BYTES) -> None:
        self.fd = fd
        self.cap = cap
        self.total = 0
        self._buf = bytearray()
        self._lock = threading.Lock()
        self.eof = False

    def _add(self, data: bytes) -> None:
        with self._lock:
            self.total += len(data)
            self._buf += data
            if len(self._buf) > 2 * self.cap:
                del self._buf[: len(self._buf) - self.cap]

    def tail(self, limit: int) -> bytes:
        """The last `limit` bytes (at most `cap`), after reading whatever is waiting in the pipe."""
        _PUMP.drain(self)
        with self._lock:
            return bytes(self._buf[-min(limit, self.cap):]) if limit > 0 else b""


class _Pump:
    """One daemon thread reading every registered stderr pipe into its ring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sel: selectors.BaseSelector | None = None
        self._rings: dict[int, StderrRing] = {}
        self._wake_r = self._wake_w = -1

    def _ensure(self) -> selectors.BaseSelector:
        if self._sel is None:
            self._sel = selectors.DefaultSelector()
            self._wake_r, self._wake_w = os.pipe()
            os.set_blocking(self._wake_r, False)
            os.set_blocking(self._wake_w, False)
            self._sel.register(self._wake_r, selectors.EVENT_READ)
            threading.Thread(target=self._run, name="mcp-tempest-stderr", daemon=True).start()
        return self._sel

    def add(self, fd: int) -> StderrRing:
        os.set_blocking(fd, False)
        ring = StderrRing(fd)
        with self._lock:
            sel = self._ensure()
            self._rings[fd] = ring
            sel.register(fd, selectors.EVENT_READ)
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        return ring

    def close(self, ring: StderrRing) -> None:
        """Stop reading `ring`'s pipe and close it (what it holds stays readable through `tail`)."""
        with self._lock:
            if self._rings.get(ring.fd) is not ring:
                return
            self._read(ring)
            del self._rings[ring.fd]
            if not ring.eof:
                with contextlib.suppress(KeyError, ValueError, OSError):
                    assert self._sel is not None
                    self._sel.unregister(ring.fd)
            ring.eof = True
            with contextlib.suppress(OSError):
                os.close(ring.fd)

    def drain(self, ring: StderrRing) -> None:
        with self._lock:
            if self._rings.get(ring.fd) is ring:
                self._read(ring)

    def _read(self, ring: StderrRing) -> None:
        """Read what is waiting (bounded: a server writing faster than us is read next round)."""
        if ring.eof:
            return
        for _ in range(64):
            try:
                data = os.read(ring.fd, _READ)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                ring.eof = True
                with contextlib.suppress(KeyError, ValueError, OSError):
                    assert self._sel is not None
                    self._sel.unregister(ring.fd)
                return
            ring._add(data)

    def _run(self) -> None:
        assert self._sel is not None
        while True:
            try:
                ready = self._sel.select(0.5)
            except (OSError, ValueError):  # an fd closed under select; the next round is clean
                continue
            with self._lock:
                for key, _ in ready:
                    if key.fd == self._wake_r:
                        with contextlib.suppress(OSError):
                            os.read(self._wake_r, 4096)
                        continue
                    ring = self._rings.get(key.fd)
                    if ring is not None:
                        self._read(ring)


_PUMP: Final = _Pump()


def capture(fd: int) -> StderrRing:
    """Read pipe `fd` (our end, which the ring now owns) into a bounded ring from now on."""
    return _PUMP.add(fd)


def release(ring: StderrRing) -> None:
    _PUMP.close(ring)

"""`--isolate-network`: a target's server in a network namespace of its own, with only a loopback.

Why: a fuzzer generates URLs, and a tool that fetches one would send our traffic wherever it
points. In a namespace of its own (`unshare(CLONE_NEWNET)` in the child before exec, then `lo`
brought up) a server reaches nothing outside it: not the internet, and not a listener on the
harness's own loopback either.

An `http+spawn:` instance listens on its port inside its namespace; the harness reaches it
through a bridge: a listener on the same port of the harness's loopback whose connections are
relayed by a thread that entered the server's namespace (`setns`, which changes only the
calling thread) before connecting. Traffic flows in, never out.

Where the machine does not allow a new network namespace (no CAP_SYS_ADMIN, not Linux),
`available()` says why in one line, which the command prints before exiting 2; there is no
silent fallback.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import os
import selectors
import socket
import struct
import sys
import threading
from typing import Any, Final

CLONE_NEWNET: Final = 0x40000000
_SIOCGIFFLAGS: Final = 0x8913
_SIOCSIFFLAGS: Final = 0x8914
_IFF_UP: Final = 0x1
_RELAY_CHUNK: Final = 65536

_libc: Any = None
if sys.platform.startswith("linux"):
    with contextlib.suppress(OSError):
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)

_checked: tuple[bool, str] | None = None


def _loopback_up() -> None:
    """`ip link set lo up` in the calling thread's namespace (a new one has `lo` down)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifr = fcntl.ioctl(s.fileno(), _SIOCGIFFLAGS, struct.pack("16sh14x", b"lo", 0))
        flags = struct.unpack("16sh14x", ifr)[1]
        fcntl.ioctl(s.fileno(), _SIOCSIFFLAGS, struct.pack("16sh14x", b"lo", flags | _IFF_UP))


def _try_in_thread() -> tuple[bool, str]:
    """Unshare the network namespace in a throw-away thread (namespaces are per thread)."""
    result: list[tuple[bool, str]] = []

    def attempt() -> None:
        if _libc.unshare(CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            result.append((False, f"cannot create a network namespace here ({os.strerror(err)}; "
                                  "it needs Linux and CAP_SYS_ADMIN)"))
            return
        try:
            _loopback_up()
        except OSError as exc:
            result.append((False, f"cannot bring up loopback in a new network namespace ({exc.strerror})"))
            return
        result.append((True, ""))

    thread = threading.Thread(target=attempt, name="mcp-tempest-netns-check", daemon=True)
    thread.start()
    thread.join()
    return result[0] if result else (False, "the network namespace check failed")


def available() -> tuple[bool, str]:
    """Whether a target can get a network namespace of its own here, and if not, why."""
    global _checked
    if _checked is None:
        _checked = (False, "network namespaces need Linux") if _libc is None else _try_in_thread()
    return _checked


def isolate_in_child() -> None:
    """For a `preexec_fn`: the child gets a network namespace of its own with loopback up."""
    if _libc is None or _libc.unshare(CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "cannot create a network namespace")
    _loopback_up()


def _enter(ns_fd: int) -> None:
    if _libc.setns(ns_fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


class LoopbackBridge:
    """127.0.0.1:`port` of the harness relayed to 127.0.0.1:`port` inside the namespace of `pid`."""

    def __init__(self, pid: int, port: int, host: str = "127.0.0.1") -> None:
        self.port = port
        self.host = host
        self._ns_fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._listener.bind((host, port))
            self._listener.listen(64)
        except OSError:
            self._listener.close()
            os.close(self._ns_fd)
            raise
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, name="mcp-tempest-netns-bridge", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._closed:
                    client.close()
                    return
                self._open.add(client)
            threading.Thread(target=self._relay, args=(client,), name="mcp-tempest-netns-relay",
                             daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        try:
            _enter(self._ns_fd)  # this thread only; the socket made next lives in the server's namespace
            upstream = socket.create_connection((self.host, self.port), timeout=5.0)
            upstream.settimeout(None)
            with self._lock:
                if self._closed:
                    return
                self._open.add(upstream)
            _pump(client, upstream)
        except OSError:
            pass
        finally:
            for s in (client, upstream):
                if s is not None:
                    with self._lock:
                        self._open.discard(s)
                    with contextlib.suppress(OSError):
                        s.close()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            sockets = list(self._open)
            self._open.clear()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            os.close(self._ns_fd)


def _pump(a: socket.socket, b: socket.socket) -> None:
    """Copy both ways until both sides have finished sending (half-close passed on)."""
    sel = selectors.DefaultSelector()
    peer = {a: b, b: a}
    sel.register(a, selectors.EVENT_READ)
    sel.register(b, selectors.EVENT_READ)
    try:
        while sel.get_map():
            for key, _ in sel.select():
                src = key.fileobj
                assert isinstance(src, socket.socket)
                data = src.recv(_RELAY_CHUNK)
                if data:
                    peer[src].sendall(data)
                    continue
                sel.unregister(src)
                with contextlib.suppress(OSError):
                    peer[src].shutdown(socket.SHUT_WR)
    finally:
        sel.close()

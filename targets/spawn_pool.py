"""`http+spawn:` instances: K copies of a server on free loopback ports, started and stopped by us.

Several instances exist so that cross-process properties (an MRTR retry served by another
process, list results independent of which process answers) hold over HTTP too. Readiness is
"accepts TCP and answers a POST", not "printed a line", because we cannot know what a
third-party server prints.
"""

from __future__ import annotations

import http.client
import itertools
import socket
import threading
import time
from collections.abc import Mapping
from typing import Final

from mcp_tempest.targets import wire
from mcp_tempest.targets.http_deadline import deadline_connection
from mcp_tempest.targets.netns import LoopbackBridge
from mcp_tempest.targets.processes import ManagedProcess, SpawnError, spawn
from mcp_tempest.targets.target_spec import TargetError, TargetSpec

DEFAULT_READY_TIMEOUT: Final = 30.0
LOOPBACK: Final = "127.0.0.1"


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """`count` distinct ports the kernel considers free right now (all held until all are chosen)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class SpawnPool:
    """K instances of an `http+spawn:` command; `urls[i]` is instance i's MCP endpoint."""

    def __init__(
        self,
        spec: TargetSpec,
        instances: int = 1,
        *,
        ready_timeout: float = DEFAULT_READY_TIMEOUT,
        env: Mapping[str, str] | None = None,
        host: str = LOOPBACK,
    ) -> None:
        if spec.kind != "http+spawn":
            raise ValueError(f"SpawnPool needs an http+spawn: target, got {spec.text!r}")
        if instances < 1:
            raise ValueError("instances must be >= 1")
        self.spec = spec
        self.count = instances
        self.ready_timeout = ready_timeout
        self.env = env
        self.host = host
        self.processes: list[ManagedProcess | None] = [None] * instances
        self.ports: list[int] = [0] * instances
        # --isolate-network: instance i listens on ports[i] in its own namespace, and bridges[i]
        # listens on the same port of our loopback and relays into it (targets.netns)
        self.bridges: list[LoopbackBridge | None] = [None] * instances
        self._rr = itertools.count()
        self._lock = threading.Lock()
        self.started = False

    @property
    def urls(self) -> list[str]:
        return [self.url(i) for i in range(self.count)]

    def url(self, i: int) -> str:
        return f"http://{self.host}:{self.ports[i]}{self.spec.path}"

    def next_index(self) -> int:
        """Round-robin instance index, shared by everything routed through this pool."""
        with self._lock:
            return next(self._rr) % self.count

    def start(self) -> SpawnPool:
        """Start every instance at once, then wait for each; raises TargetError (one line) and
        stops what was started if any instance fails."""
        if self.started:
            return self
        ports = free_ports(self.count, self.host)
        try:
            for i, port in enumerate(ports):
                self.ports[i] = port
                self.processes[i] = self._spawn(port, i)
            deadline = time.monotonic() + self.ready_timeout
            for i in range(self.count):
                self._wait_ready(i, deadline)
        except BaseException:
            self.stop()
            raise
        self.started = True
        return self

    def restart(self, i: int) -> None:
        """Replace instance i by a fresh process on a new port (its URL changes)."""
        old = self.processes[i]
        if old is not None:
            old.reap(grace=0.5, term_grace=1.0)
            old.close_log()
        self._close_bridge(i)
        self.ports[i] = free_ports(1, self.host)[0]
        self.processes[i] = self._spawn(self.ports[i], i)
        self._wait_ready(i, time.monotonic() + self.ready_timeout)

    def alive(self, i: int | None = None) -> bool:
        which = range(self.count) if i is None else [i]
        return all(p is not None and p.running() for p in (self.processes[j] for j in which))

    def stop(self) -> None:
        """Stop every instance (SIGTERM to each group, then SIGKILL); idempotent."""
        procs = [p for p in self.processes if p is not None]
        for p in procs:
            p.signal_group(15)  # all at once, then wait for each
        for p in procs:
            p.reap(grace=2.0, term_grace=1.0)
            p.close_log()
        for i in range(self.count):
            self._close_bridge(i)
        self.processes = [None] * self.count
        self.started = False

    def __enter__(self) -> SpawnPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- internals ---

    def _spawn(self, port: int, i: int) -> ManagedProcess:
        try:
            proc = spawn(self.spec.command_for_port(port), pipes=False, env=self.env,
                         isolate_network=self.spec.isolate_network)
        except SpawnError as exc:
            raise TargetError(f"cannot start {self.spec.text!r}: {exc}") from None
        if self.spec.isolate_network:
            try:
                self.bridges[i] = LoopbackBridge(proc.pid, port, self.host)
            except OSError as exc:
                proc.reap(grace=0.0, term_grace=0.2)
                proc.close_log()
                raise TargetError(f"cannot reach instance {i} of {self.spec.text!r} in its network "
                                  f"namespace: {exc.strerror or exc}") from None
        return proc

    def _close_bridge(self, i: int) -> None:
        bridge, self.bridges[i] = self.bridges[i], None
        if bridge is not None:
            bridge.close()

    def _wait_ready(self, i: int, deadline: float) -> None:
        proc = self.processes[i]
        assert proc is not None
        port = self.ports[i]
        step = 0.02
        while True:
            status = proc.exit_status()
            if status is not None:
                raise TargetError(
                    f"instance {i} ({self.url(i)}) exited with status {status} before it was ready"
                    + _tail_hint(proc)
                )
            if _answers_post(self.host, port, self.spec.path, deadline):
                return
            if time.monotonic() >= deadline:
                raise TargetError(
                    f"instance {i} not ready at {self.url(i)} after {self.ready_timeout:g} s" + _tail_hint(proc)
                )
            time.sleep(step)
            step = min(step * 1.5, 0.25)


def _answers_post(host: str, port: int, path: str, deadline: float) -> bool:
    """TCP connect, then one POST server/discover: any HTTP status line and headers at all mean
    ready. The body is never read (an endless one must not be), and the attempt may use all the
    time left: a server that takes 2 s to answer is ready under a 20 s timeout."""
    try:
        with socket.create_connection((host, port), timeout=max(min(deadline - time.monotonic(), 1.0), 0.05)):
            pass
    except OSError:
        return False
    msg = wire.build_request("ready", "server/discover")
    conn = deadline_connection("http", host, port, deadline)
    try:
        conn.request("POST", path, body=wire.dumps(msg), headers=wire.http_headers(msg))
        conn.getresponse()
        return True
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def _tail_hint(proc: ManagedProcess) -> str:
    tail = proc.stderr_tail(2048).decode("utf-8", "replace").strip().splitlines()
    return f"; its output ends: {tail[-1][:200]}" if tail else ""

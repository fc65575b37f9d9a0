"""Endpoints: fresh and warm processes for each kind of target, with start-up hidden by a pool.

stdio:        a StdioPool keeps the next fresh processes already started; one warm process
              is kept alive across examples for properties that do not need a fresh one.
http+spawn:   the same idea with HTTP instances: spares are started (and waited for) in
              background threads while the current example runs; one warm instance is kept.
http://URL:   one running endpoint; "fresh" can only mean a new connection to it, which the
              endpoint says (`fresh_processes = False`) so properties and reports can say so.

Ending a process is also moved off the example's critical path: a process the example is done
with is closed in the background (a dead one at once, so its exit status and stderr land in
the transcript that needs them).
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from mcp_tempest.targets.connection import Connection, next_proc
from mcp_tempest.targets.endpoint import Endpoint, HarnessError
from mcp_tempest.targets.http_driver import HttpConnection
from mcp_tempest.targets.processes import SpawnError
from mcp_tempest.targets.spawn_pool import SpawnPool
from mcp_tempest.targets.stdio_driver import StdioConnection, StdioPool
from mcp_tempest.targets.target_spec import TargetError, TargetSpec
from mcp_tempest.targets.transcript import Transcript
from mcp_tempest.targets.transports import HTTP, STDIO


class Background:
    """Runs clean-up callables on one daemon thread; a full queue runs them inline instead."""

    def __init__(self, limit: int = 4) -> None:
        self._queue: queue.Queue[Callable[[], Any] | None] = queue.Queue(maxsize=limit)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, fn: Callable[[], Any]) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="mcp-tempest-cleanup", daemon=True)
                self._thread.start()
        try:
            self._queue.put_nowait(fn)
        except queue.Full:
            with contextlib.suppress(Exception):
                fn()

    def _run(self) -> None:
        while True:
            fn = self._queue.get()
            if fn is None:
                return
            with contextlib.suppress(Exception):
                fn()

    def close(self, timeout: float = 20.0) -> None:
        with self._lock:
            thread = self._thread
            self._thread = None
        if thread is None:
            return
        deadline = time.monotonic() + timeout
        while thread.is_alive() and time.monotonic() < deadline:
            try:
                self._queue.put(None, timeout=0.1)
                break
            except queue.Full:
                continue
        thread.join(max(deadline - time.monotonic(), 0.0))
        while True:  # whatever the thread did not get to (it is stuck or gone) runs here
            try:
                fn = self._queue.get_nowait()
            except queue.Empty:
                return
            if fn is not None:
                with contextlib.suppress(Exception):
                    fn()


def coverage_env(spec: TargetSpec) -> dict[str, str] | None:
    """The environment of a target whose code is measured (`targets.code_coverage`): the plan travels
    to the processes, and to the fork server's zygote, in a variable; None (ours) otherwise. A Node
    plan's `coverage_rc` is its V8 data folder (`targets.node_coverage`): NODE_V8_COVERAGE."""
    if not spec.coverage_rc:
        return None
    from mcp_tempest.targets.node_coverage import node_env

    node = node_env(spec.coverage_rc)
    if node is not None:
        return {**os.environ, **node}
    from mcp_tempest.targets.code_coverage import process_env

    return {**os.environ, **process_env(spec.coverage_rc)}


# --- stdio ---


class StdioEndpoint(Endpoint):
    transport = STDIO

    def __init__(self, spec: TargetSpec, *, timeout: float = 10.0, spares: int = 1) -> None:
        self.spec = spec
        self.timeout = timeout
        self._pool = StdioPool(spec, size=spares, timeout=timeout, close_grace=1.0, env=coverage_env(spec))
        self._warm: StdioConnection | None = None
        self._bg = Background()
        self._closed = False

    def prepare(self, fresh_per_example: int) -> None:
        # One spare more than an example uses, so the next example's processes are starting (in
        # parallel, on another core) while this one runs.
        self._pool.size = max(1, min(fresh_per_example + 1, 3)) if fresh_per_example else 1
        self._pool.fill()

    @property
    def fresh_taken(self) -> int:
        """How many fresh processes this endpoint has handed out (what a benchmark divides by)."""
        return self._pool.taken

    def fresh(self, transcript: Transcript) -> Connection:
        if self._closed:
            raise HarnessError("endpoint is closed")
        try:
            return self._pool.take(transcript)
        except SpawnError as exc:
            raise HarnessError(f"cannot start {self.spec.text!r}: {exc}") from None

    def discard_warm(self) -> None:
        conn, self._warm = self._warm, None
        if conn is not None:
            conn.rebind(Transcript(target=self.spec.text, transport=STDIO), note="closing")
            self._bg.submit(conn.close)

    def warm(self, transcript: Transcript) -> Connection:
        conn = self._warm
        self._warm = None
        if conn is not None and conn.alive():
            conn.rebind(transcript)
            return conn
        if conn is not None:
            self._bg.submit(conn.close)
        return self.fresh(transcript)

    def retire(self, conn: Connection, *, reusable: bool) -> None:
        assert isinstance(conn, StdioConnection)
        if reusable and self._warm is None and not self._closed and conn.alive():
            self._warm = conn
            return
        if not conn.alive():
            conn.close()  # dead: exit status and stderr belong in this example's transcript
            return
        # Alive but done with: move it to a scratch transcript so closing it later cannot
        # touch the transcript the caller is about to judge, and close it in the background.
        conn.rebind(Transcript(target=self.spec.text, transport=STDIO), note="closing")
        self._bg.submit(conn.close)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        warm, self._warm = self._warm, None
        try:
            if warm is not None:
                warm.close()
            self._pool.close()
        finally:
            self._bg.close()


# --- HTTP ---


class _PinnedHttp(HttpConnection):
    """An HTTP connection to one instance, recorded in the transcript as process `pin`.

    The driver numbers processes by the index of the URL in its list, so the URL is listed
    `pin + 1` times and every send is directed at index `pin`.
    """

    def __init__(self, transcript: Transcript, url: str, pin: int, *, timeout: float) -> None:
        super().__init__(transcript, [url] * (pin + 1), timeout=timeout, first_instance=pin)
        self.pin = pin
        self.instance_url = url

    def send(self, frame: Any, *, headers: dict[str, Any] | None = None, instance: int | None = None,
             **kw: Any) -> int:
        return super().send(frame, headers=headers, instance=self.pin, **kw)

    def send_concurrently(self, frames: Any, *, headers: Any = None, timeout: float | None = None,
                          instances: Any = None) -> list[int]:
        return super().send_concurrently(
            frames, headers=headers, timeout=timeout, instances=[self.pin] * len(frames)
        )

    def open_stream(self, frame: Any, *, headers: dict[str, Any] | None = None, instance: int | None = None,
                    **kw: Any) -> Any:
        return super().open_stream(frame, headers=headers, instance=self.pin, **kw)

    def alive(self) -> bool:
        return HttpConnection(Transcript(self.instance_url, HTTP), [self.instance_url]).alive()


class _Spare:
    """One HTTP instance being started in a background thread."""

    def __init__(self, spec: TargetSpec, ready_timeout: float) -> None:
        self.pool = SpawnPool(spec, 1, ready_timeout=ready_timeout, env=coverage_env(spec))
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._start, name="mcp-tempest-spawn", daemon=True)
        self.thread.start()

    def _start(self) -> None:
        try:
            self.pool.start()
        except BaseException as exc:  # noqa: BLE001 - reported by whoever takes it
            self.error = exc

    def ready(self, timeout: float) -> SpawnPool:
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise HarnessError(f"instance of {self.pool.spec.text!r} still starting after {timeout:g} s")
        if self.error is not None:
            if isinstance(self.error, TargetError):
                raise HarnessError(str(self.error))
            raise HarnessError(f"cannot start {self.pool.spec.text!r}: {self.error}")
        return self.pool

    def stop(self) -> None:
        self.thread.join(60.0)
        self.pool.stop()


class HttpSpawnEndpoint(Endpoint):
    transport = HTTP

    def __init__(self, spec: TargetSpec, *, timeout: float = 10.0, spares: int = 1,
                 ready_timeout: float = 30.0) -> None:
        self.spec = spec
        self.timeout = timeout
        self.ready_timeout = ready_timeout
        self.spares_wanted = max(spares, 0)
        self._spares: deque[_Spare] = deque()
        self._warm: SpawnPool | None = None
        self._owner: dict[int, SpawnPool] = {}
        self._bg = Background()
        self._closed = False

    def prepare(self, fresh_per_example: int) -> None:
        self.spares_wanted = max(1, min(fresh_per_example + 1, 3)) if fresh_per_example else 1
        self._fill()

    def _fill(self) -> None:
        while not self._closed and len(self._spares) < self.spares_wanted:
            self._spares.append(_Spare(self.spec, self.ready_timeout))

    def _take_instance(self) -> SpawnPool:
        if self._closed:
            raise HarnessError("endpoint is closed")
        spare = self._spares.popleft() if self._spares else _Spare(self.spec, self.ready_timeout)
        self._fill()
        try:
            return spare.ready(self.ready_timeout + 5.0)
        except HarnessError:
            self._bg.submit(spare.stop)
            raise

    def _connect(self, transcript: Transcript, pool: SpawnPool) -> Connection:
        conn = _PinnedHttp(transcript, pool.url(0), next_proc(transcript), timeout=self.timeout)
        self._owner[id(conn)] = pool
        return conn

    def fresh(self, transcript: Transcript) -> Connection:
        return self._connect(transcript, self._take_instance())

    def discard_warm(self) -> None:
        pool, self._warm = self._warm, None
        if pool is not None:
            self._bg.submit(pool.stop)

    def warm(self, transcript: Transcript) -> Connection:
        pool = self._warm
        self._warm = None
        if pool is None or not pool.alive():
            if pool is not None:
                self._bg.submit(pool.stop)
            pool = self._take_instance()
        return self._connect(transcript, pool)

    def is_alive(self, conn: Connection) -> bool:
        pool = self._owner.get(id(conn))
        return pool.alive() if pool is not None else True

    def retire(self, conn: Connection, *, reusable: bool) -> None:
        pool = self._owner.pop(id(conn), None)
        conn.close()
        if pool is None:
            return
        if not pool.alive():
            _record_exit(conn, pool)
            pool.stop()
            return
        if reusable and self._warm is None and not self._closed:
            self._warm = pool
            return
        self._bg.submit(pool.stop)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self._warm is not None:
                self._warm.stop()
                self._warm = None
            while self._spares:
                self._spares.popleft().stop()
            for pool in list(self._owner.values()):
                pool.stop()
            self._owner.clear()
        finally:
            self._bg.close()


def _record_exit(conn: Connection, pool: SpawnPool) -> None:
    """An instance died during the example: its exit status and output tail are evidence."""
    proc = pool.processes[0]
    if proc is None or not isinstance(conn, _PinnedHttp):
        return
    conn.transcript.add("exit", proc=conn.pin, status=proc.exit_status(), note="instance exited")
    tail = proc.stderr_tail()
    if tail:
        conn.transcript.add("stderr", proc=conn.pin, raw=tail)


class HttpUrlEndpoint(Endpoint):
    """A running endpoint: every connection is new, the server behind it is always the same."""

    transport = HTTP
    fresh_processes = False

    def __init__(self, spec: TargetSpec, *, timeout: float = 10.0) -> None:
        self.spec = spec
        self.timeout = timeout

    def fresh(self, transcript: Transcript) -> Connection:
        return _PinnedHttp(transcript, self.spec.url, next_proc(transcript), timeout=self.timeout)

    def is_alive(self, conn: Connection) -> bool:
        return True  # not ours to watch; a dead endpoint shows as refused connections

    def close(self) -> None:
        pass


def open_endpoint(spec: TargetSpec, *, timeout: float = 10.0) -> Endpoint:
    if spec.kind == "stdio":
        return StdioEndpoint(spec, timeout=timeout)
    if spec.kind == "http+spawn":
        return HttpSpawnEndpoint(spec, timeout=timeout)
    return HttpUrlEndpoint(spec, timeout=timeout)

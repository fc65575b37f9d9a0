"""Server processes the harness starts: each in its own session, reaped as a whole group.

Why a group: a target command is often a wrapper (`npx`, `sh -c`, `uv run`) whose real server
is a grandchild. Killing only the pid we started would orphan the server, so every signal goes
to the process group, and a registry of live groups makes sure an exception, `sys.exit`,
Ctrl-C or SIGTERM leaves nothing behind.

Why more than the group: a daemon that double-forks and calls `setsid` leaves it; see
`targets.ownership` (an environment tag per server, a child subreaper, a parent-death signal,
a guardian for a SIGKILLed harness) and `targets.cgroups` (a cgroup per server where possible).
Stderr goes to a bounded ring in memory (`targets.stderr_ring`), never to a file.

Why `waitid(WNOWAIT)`: once a leader is reaped its pid, which is also the group id, may be
reused by the next process we start in its own session, and a late `killpg` would then hit the
wrong group. Exit is observed without reaping; the leader stays a zombie, holding its pid, until
the rest of the group has been signalled.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Final

from mcp_tempest.targets import netns, ownership
from mcp_tempest.targets.cgroups import ServerCgroup, new_server_cgroup
from mcp_tempest.targets.stderr_ring import StderrRing, capture, release

STDERR_TAIL_BYTES: Final = 8192
CODE_COVERAGE_VAR: Final = "MCP_TEMPEST_COVERAGE_RC"  # targets.code_coverage.RC_VAR
# The coverage context a measured process is started in (what the harness was doing: a property's
# name), read by its rcfile and by the fork server's children; see targets.code_coverage.
COVERAGE_CONTEXT_VAR: Final = "MCP_TEMPEST_COVERAGE_CONTEXT"


@contextlib.contextmanager
def coverage_context(name: str) -> Iterator[None]:
    """Measured processes started inside the block run in coverage context `name` (a property):
    `spawn` and the fork server's orders read it when they start one. Restored after, so it
    never outlives the job it names."""
    before = os.environ.get(COVERAGE_CONTEXT_VAR)
    os.environ[COVERAGE_CONTEXT_VAR] = name
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(COVERAGE_CONTEXT_VAR, None)
        else:
            os.environ[COVERAGE_CONTEXT_VAR] = before
_POLL_STEP: Final = 0.005
_POLL_MAX_STEP: Final = 0.05


class SpawnError(RuntimeError):
    """The command could not be started at all; the message is one line meant for the user."""


GEVENT_PATCHED = (
    "this process is gevent-monkey-patched, so its child processes cannot be watched reliably (a live "
    "server reads as exited); Locust 2.40.0's pytest plugin patches every pytest process on import: "
    "upgrade Locust (>= 2.40.1) or run pytest with -p no:locust"
)


def gevent_patched() -> bool:
    """True when gevent has monkey-patched this process's subprocess handling.

    Why: under gevent's patches, libev reaps children behind our back, so `exit_status` sees a
    running server as gone and the properties report deaths that did not happen (false findings).
    Spawning refuses instead (GEVENT_PATCHED). Locust's own processes never spawn servers."""
    monkey = sys.modules.get("gevent.monkey")
    check = getattr(monkey, "is_module_patched", None)
    return bool(callable(check) and (check("subprocess") or check("os")))


class ManagedProcess:
    """One started command: its pipes, its stderr ring, its tag, and the group it leads."""

    def __init__(self, argv: Sequence[str], popen: subprocess.Popen[bytes], log: StderrRing, tag: str = "",
                 cgroup: ServerCgroup | None = None) -> None:
        self.argv = list(argv)
        self.popen = popen
        self.pid = popen.pid
        self.pgid = popen.pid  # start_new_session: the child is the leader of a fresh group
        self.started = time.monotonic()
        self._log = log
        self.tag = tag
        self.cgroup = cgroup
        self._status: int | None = None
        self._reaped = False
        self._lock = threading.Lock()
        # How the leader ended: "self" (exited before we asked), "eof" (after stdin closed),
        # "SIGTERM" or "SIGKILL" (we had to escalate). Set by reap().
        self.ended_by = ""

    # --- state ---

    def exit_status(self) -> int | None:
        """The leader's exit status if it has exited (negative = killed by that signal), without reaping."""
        if self._reaped:
            return self._status
        if self._status is not None:
            return self._status
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            # Someone else reaped it (e.g. Popen.poll); fall back to what Popen knows.
            self._status = self.popen.returncode if self.popen.returncode is not None else -1
            return self._status
        if info is None or info.si_pid == 0:
            return None
        if info.si_code == os.CLD_EXITED:
            self._status = info.si_status
        else:
            self._status = -info.si_status
        return self._status

    def running(self) -> bool:
        return self.exit_status() is None

    @property
    def reaped(self) -> bool:
        return self._reaped

    def wait_exit(self, timeout: float) -> int | None:
        """Wait up to `timeout` for the leader to exit (not reaping it); its status or None."""
        deadline = time.monotonic() + max(timeout, 0.0)
        step = _POLL_STEP
        while True:
            status = self.exit_status()
            if status is not None or time.monotonic() >= deadline:
                return status
            time.sleep(min(step, max(deadline - time.monotonic(), 0.0)))
            step = min(step * 2, _POLL_MAX_STEP)

    # --- output ---

    def stderr_tail(self, limit: int = STDERR_TAIL_BYTES) -> bytes:
        """The last `limit` bytes the process wrote to stderr (and to stdout when it was not piped)."""
        return self._log.tail(limit)

    # --- ending ---

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, sig)

    def reap(self, *, grace: float = 2.0, term_grace: float = 1.0) -> int:
        """End the whole group and reap the leader; idempotent, returns the leader's exit status.

        Order (the stdio spec's shutdown, then escalation): close stdin, wait `grace` for the
        leader to exit, SIGTERM the group, wait `term_grace`, SIGKILL the group. Members that
        outlive an exited leader get the same SIGTERM-then-SIGKILL treatment.
        """
        with self._lock:
            if self._reaped:
                return self._status if self._status is not None else -1
            try:
                self.ended_by = "self" if self.exit_status() is not None else "eof"
                if self.popen.stdin is not None:
                    with contextlib.suppress(OSError):
                        self.popen.stdin.close()
                status = self.wait_exit(grace)
                if status is None:
                    self.ended_by = "SIGTERM"
                    self.signal_group(signal.SIGTERM)
                    status = self.wait_exit(term_grace)
                if status is None:
                    self.ended_by = "SIGKILL"
                    self.signal_group(signal.SIGKILL)
                    status = self.wait_exit(5.0)
                self._end_stragglers(term_grace)
            finally:
                # Daemons that left the group (double fork + setsid) are still in its cgroup
                # and still carry our tag (unless they dropped their environment).
                if self.cgroup is not None:
                    self.cgroup.kill()
                if self.tag:
                    with contextlib.suppress(OSError):
                        ownership.kill_tagged(self.tag)
                # Reap the leader only now: its zombie kept the group id from being reused.
                if self.exit_status() is None:
                    self.ended_by = "SIGKILL"
                    self.signal_group(signal.SIGKILL)
                try:
                    self.popen.wait(timeout=5.0)
                except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
                    pass
                if self.popen.returncode is not None:
                    self._status = self.popen.returncode
                if self.cgroup is not None:
                    self.cgroup.remove()
                self._reaped = True
                # stdout stays open: its owner may still read what the group wrote before it
                # died, and closing it here would let the fd number be reused under the reader.
                _forget(self)
            return self._status if self._status is not None else -1

    def _end_stragglers(self, term_grace: float) -> None:
        """Members of the group still running after the leader exited (a wrapper's children)."""
        if not group_members(self.pgid, exclude=self.pid):
            return
        self.signal_group(signal.SIGTERM)
        deadline = time.monotonic() + term_grace
        while time.monotonic() < deadline and group_members(self.pgid, exclude=self.pid):
            time.sleep(_POLL_STEP * 4)
        if group_members(self.pgid, exclude=self.pid):
            self.signal_group(signal.SIGKILL)
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline and group_members(self.pgid, exclude=self.pid):
                time.sleep(_POLL_STEP * 4)

    def close_pipes(self) -> None:
        """Close our ends of stdin and stdout (after the reader is done with them)."""
        for pipe in (self.popen.stdin, self.popen.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()

    def close_log(self) -> None:
        release(self._log)

    def __repr__(self) -> str:
        return f"ManagedProcess(pid={self.pid}, argv={self.argv!r})"


def _resolve_own_script(argv: Sequence[str]) -> list[str]:
    """`mcp-tempest serve ...` names our own console script, which sits beside this interpreter.

    Users run `.venv/bin/mcp-tempest fuzz --target "stdio:mcp-tempest serve --bug X"` without
    activating the venv; the target should still mean the reference server of this installation.
    """
    if argv and argv[0] == "mcp-tempest" and shutil.which("mcp-tempest") is None:
        beside = Path(sys.executable).with_name("mcp-tempest")
        if beside.is_file():
            return [str(beside), *argv[1:]]
    return list(argv)


def spawn(
    argv: Sequence[str],
    *,
    pipes: bool = True,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    pass_fds: Sequence[int] = (),
    isolate_network: bool = False,
    output: int | None = None,
) -> ManagedProcess:
    """Start `argv` in a new session; stdin/stdout are pipes when `pipes`, else stdin is /dev/null
    and stdout joins stderr in the stderr ring, or in `output` (an open file the caller keeps, such
    as Locust's log) when given. Raises SpawnError (one line) when it cannot start.

    The child is tagged (`ownership.TAG_VAR`), dies with the harness (parent-death signal), and
    is started from the long-lived spawner thread so that signal follows the harness, not a
    short-lived worker thread. With `isolate_network` it gets a network namespace of its own
    (`targets.netns`). When the child's environment names a code-coverage plan
    (`targets.code_coverage`), a Python command is run under coverage.py."""
    if not argv:
        raise SpawnError("empty command line")
    if gevent_patched():
        raise SpawnError(GEVENT_PATCHED)
    _install_signal_handlers()
    ownership.become_subreaper()
    ownership.ensure_guardian()
    argv = _resolve_own_script(argv)
    tag = ownership.new_tag()
    child_env = {**(os.environ if env is None else env), ownership.TAG_VAR: tag}
    if child_env.get(CODE_COVERAGE_VAR):  # a code-coverage plan: a Python server runs under coverage
        from mcp_tempest.targets.code_coverage import measured

        # the context now, not when the endpoint's environment was made
        child_env[COVERAGE_CONTEXT_VAR] = os.environ.get(COVERAGE_CONTEXT_VAR, "")
        argv = measured(argv, child_env)
    cgroup = new_server_cgroup(tag)
    cgroup_fd = -1
    if cgroup is not None:
        try:
            cgroup_fd = cgroup.join_fd()
        except OSError:
            cgroup.remove()
            cgroup = None
    err_r, err_w = os.pipe()
    try:
        popen = ownership.run_in_spawner(
            lambda: subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE if pipes else subprocess.DEVNULL,
                stdout=subprocess.PIPE if pipes else (err_w if output is None else output),
                stderr=err_w if output is None else output,
                bufsize=0,
                start_new_session=True,
                close_fds=True,
                env=child_env,
                cwd=cwd,
                pass_fds=tuple(pass_fds),
                preexec_fn=ownership.die_with_parent_preexec(
                    os.getpid(), cgroup_fd, netns.isolate_in_child if isolate_network else None),
            )
        )
    except (OSError, subprocess.SubprocessError) as exc:
        os.close(err_r)
        if cgroup is not None:
            cgroup.remove()
        if not isinstance(exc, OSError):  # raised by preexec_fn: only the namespace can fail there
            raise SpawnError(f"cannot start {argv[0]} in a network namespace of its own") from None
        if isinstance(exc, FileNotFoundError):
            raise SpawnError(f"command not found: {argv[0]}") from None
        if isinstance(exc, PermissionError):
            raise SpawnError(f"command is not executable: {argv[0]}") from None
        raise SpawnError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
    finally:
        os.close(err_w)
        if cgroup_fd >= 0:
            os.close(cgroup_fd)
    return register(ManagedProcess(argv, popen, capture(err_r), tag, cgroup))


def register(proc: ManagedProcess) -> ManagedProcess:
    """Put `proc` in the registry of live groups that the exit and signal hooks reap."""
    with _REGISTRY_LOCK:
        _LIVE[proc.pid] = proc
    return proc


def group_members(pgid: int, *, exclude: int | None = None) -> list[int]:
    """Pids of non-zombie processes in group `pgid` (Linux /proc; elsewhere a killpg probe)."""
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():  # pragma: no cover - non-Linux fallback
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [pgid] if exclude != pgid else []
    found: list[int] = []
    for entry in os.scandir(proc_dir):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid == exclude:
            continue
        try:
            stat = Path(entry.path, "stat").read_bytes()
        except OSError:
            continue
        # Fields after the parenthesised command name: state ppid pgrp ...
        tail = stat[stat.rfind(b")") + 2 :].split()
        if len(tail) >= 3 and int(tail[2]) == pgid and tail[0] not in (b"Z", b"X"):
            found.append(pid)
    return found


def group_alive(pgid: int) -> bool:
    """Whether any member of the group is still running (zombies do not count)."""
    return bool(group_members(pgid))


# --- the registry of live groups ---

_LIVE: dict[int, ManagedProcess] = {}
_REGISTRY_LOCK = threading.Lock()
_HANDLERS_INSTALLED = False
_HANDLED_SIGNALS: Final = (signal.SIGTERM, signal.SIGHUP)


def _forget(proc: ManagedProcess) -> None:
    with _REGISTRY_LOCK:
        _LIVE.pop(proc.pid, None)


def live_processes() -> list[ManagedProcess]:
    with _REGISTRY_LOCK:
        return list(_LIVE.values())


def reap_all(*, grace: float = 0.2, term_grace: float = 0.5) -> None:
    """End every group still registered; quick, because it runs on the way out."""
    procs = live_processes()
    for proc in procs:
        if proc.popen.stdin is not None:
            with contextlib.suppress(OSError):
                proc.popen.stdin.close()
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.reap(grace=grace, term_grace=term_grace)


def _on_signal(signum: int, frame: object) -> None:
    """SIGTERM/SIGHUP would end Python without atexit: clean up, then die of the same signal."""
    reap_all(grace=0.0, term_grace=0.3)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_signal_handlers() -> None:
    """Install once, from the main thread, and only over default dispositions (Locust and others
    keep theirs). SIGINT needs nothing: KeyboardInterrupt unwinds through the drivers' `finally`
    blocks and the atexit hook catches the rest."""
    global _HANDLERS_INSTALLED
    if _HANDLERS_INSTALLED or threading.current_thread() is not threading.main_thread():
        return
    _HANDLERS_INSTALLED = True
    for sig in _HANDLED_SIGNALS:
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(sig) in (signal.SIG_DFL, None):
                signal.signal(sig, _on_signal)


atexit.register(reap_all)

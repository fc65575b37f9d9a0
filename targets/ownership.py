"""Making sure nothing a server started outlives it: subreaper, parent-death signal, an env tag.

- A server that double-forks and calls `setsid` leaves its process group, so `killpg` misses
  the daemon. Every server is started with `MCP_TEMPEST_OWNER=<harness pid>.<serial>` in its
  environment, which its daemons inherit; ending a server also kills every process carrying its
  tag. The harness is a child subreaper (Linux), so those orphans become its children (not
  init's) and are reaped by it instead of lingering as zombies.
- If the harness is SIGKILLed nothing of it runs, so each server gets PR_SET_PDEATHSIG: the
  kernel kills it when the harness dies. The signal follows the *thread* that forked, so every
  server is started from one long-lived thread (`run_in_spawner`), never a short-lived worker.
- The parent-death signal reaches only the process the harness started, not a wrapper's
  children (`sh -c`, `npx`). So each server also gets a cgroup of its own where the machine has
  a writable cgroup v2 hierarchy (`targets.cgroups`), and a guardian process, started with the
  first server, holds the read end of a pipe that only the harness holds open: at EOF (the
  harness is gone, however it ended) it kills the harness's cgroups and every process carrying
  one of the harness's tags, then removes the cgroups and exits.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import itertools
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Final, TypeVar

from mcp_tempest.targets import cgroups

TAG_VAR: Final = "MCP_TEMPEST_OWNER"
_PR_SET_PDEATHSIG: Final = 1
_PR_SET_CHILD_SUBREAPER: Final = 36

T = TypeVar("T")

_libc: Any = None
if sys.platform.startswith("linux"):
    with contextlib.suppress(OSError):
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)

_serial = itertools.count(1)
_subreaper_done = False


def new_tag() -> str:
    """A value for TAG_VAR naming one server of this harness."""
    return f"{os.getpid()}.{next(_serial)}"


def become_subreaper() -> bool:
    """Make orphaned descendants our children (once per process); False where unsupported."""
    global _subreaper_done
    if _subreaper_done:
        return True
    if _libc is None:
        return False
    _subreaper_done = _libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    return _subreaper_done


def die_with_parent_preexec(parent: int, cgroup_fd: int = -1,
                            also: Callable[[], None] | None = None) -> Callable[[], None] | None:
    """A `preexec_fn` that moves the child into its cgroup (when `cgroup_fd` is an open
    `cgroup.procs`), runs `also` (e.g. a network namespace of its own; an exception there fails
    the start) and sets SIGKILL as its parent-death signal (None off Linux)."""
    if _libc is None:
        return also
    prctl = _libc.prctl

    def preexec() -> None:
        if cgroup_fd >= 0:
            with contextlib.suppress(OSError):
                os.write(cgroup_fd, b"0")
        if also is not None:
            also()
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the harness died between fork and prctl
            os._exit(137)

    return preexec


# --- the guardian: cleans up after a harness that could not (SIGKILL) ---

# argv: [python, -I, -S, -c, GUARDIAN, cgroup root or "", tag prefix]; stdin: the harness's pipe
GUARDIAN: Final = r'''
import os, signal, sys, time
root, prefix = sys.argv[1], sys.argv[2].encode()
try:
    while os.read(0, 4096):
        pass
except OSError:
    pass

def tagged():
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if any(item.startswith(prefix) for item in env.split(b"\0")):
            found.append(int(name))
    return found

def populated():
    try:
        with open(os.path.join(root, "cgroup.events")) as f:
            return "populated 1" in f.read()
    except OSError:
        return False

deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    if root:
        try:
            with open(os.path.join(root, "cgroup.kill"), "w") as f:
                f.write("1")
        except OSError:
            pass
    pids = tagged()
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if not pids and not (root and populated()):
        break
    time.sleep(0.02)
# A cgroup whose last process has just gone may refuse rmdir for a moment (EBUSY): try again.
deadline = time.monotonic() + 5
while root and os.path.isdir(root) and time.monotonic() < deadline:
    for path, _dirs, _files in os.walk(root, topdown=False):
        try:
            os.rmdir(path)
        except OSError:
            pass
    if os.path.isdir(root):
        time.sleep(0.02)
'''

_guardian: subprocess.Popen[bytes] | None = None
_guardian_pid = 0
_guardian_lock = threading.Lock()


def ensure_guardian() -> None:
    """Start this harness's guardian once (per process: a forked child starts its own)."""
    global _guardian, _guardian_pid
    if _libc is None:
        return
    with _guardian_lock:
        if _guardian_pid == os.getpid():
            return
        _guardian_pid = os.getpid()
        root = cgroups.harness_root()
        with contextlib.suppress(OSError):
            # Its own session and an empty environment: no signal to our group and no tag a test
            # or a kill_tagged looks for reaches it; it ends by itself at EOF on stdin.
            _guardian = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", GUARDIAN, str(root or ""), f"{TAG_VAR}={os.getpid()}."],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, close_fds=True, env={},
            )


def _forget_guardian_in_child() -> None:
    """A fork of the harness must not keep the parent's guardian waiting (nor think it has one)."""
    global _guardian, _guardian_pid
    if _guardian is not None and _guardian.stdin is not None:
        with contextlib.suppress(OSError):
            os.close(_guardian.stdin.fileno())
    _guardian, _guardian_pid = None, 0


os.register_at_fork(after_in_child=_forget_guardian_in_child)


# --- one long-lived thread starts every server ---

_jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
_spawner: threading.Thread | None = None
_spawner_lock = threading.Lock()


def _spawner_loop() -> None:
    while True:
        job, future = _jobs.get()
        if not future.set_running_or_notify_cancel():
            continue
        try:
            future.set_result(job())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            future.set_exception(exc)


def run_in_spawner(job: Callable[[], T]) -> T:
    """Run `job` (a Popen) on the spawner thread, which lives as long as the harness."""
    global _spawner
    if _libc is None:
        return job()
    with _spawner_lock:
        if _spawner is None:
            _spawner = threading.Thread(target=_spawner_loop, name="mcp-tempest-spawner", daemon=True)
            _spawner.start()
    if threading.current_thread() is _spawner:
        return job()
    future: Future[T] = Future()
    _jobs.put((job, future))
    return future.result()


# --- finding what carries a tag ---


def tagged_processes(value: str, var: str = TAG_VAR) -> list[int]:
    """Pids of running processes whose environment has `var=value` (not ours, not zombies)."""
    needle = f"{var}={value}".encode()
    me = os.getpid()
    found: list[int] = []
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():  # pragma: no cover - non-Linux
        return found
    for entry in os.scandir(proc_dir):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            env = Path(entry.path, "environ").read_bytes()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            found.append(int(entry.name))
    return found


def kill_tagged(value: str) -> list[int]:
    """SIGKILL every process tagged `value` and reap those that became our children; their pids."""
    pids = tagged_processes(value)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    for pid in pids:
        _reap_adopted(pid)
    return pids


def _reap_adopted(pid: int) -> None:
    """Wait for an orphan the subreaper adopted (never for a child some Popen owns: those are
    never tagged with a server's own tag at this point, because its leader is reaped first)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, 0)


# --- temporary directories a killed harness could not remove ---


@contextlib.contextmanager
def owned_tempdir(prefix: str) -> Iterator[Path]:
    """A temporary directory named `<prefix><our pid>-...`, removed on the way out; first, those
    of earlier harnesses (same prefix, same user) whose process is gone are removed: a harness
    killed by SIGKILL or by a re-raised SIGTERM unwinds nothing, and its processes the guardian
    ends, but not its files."""
    root = Path(tempfile.gettempdir())
    with contextlib.suppress(OSError):
        for entry in root.glob(f"{prefix}*-*"):
            pid = entry.name[len(prefix):].split("-", 1)[0]
            if not pid.isdigit() or Path(f"/proc/{pid}").exists() or entry.is_symlink() or not entry.is_dir():
                continue
            if entry.stat().st_uid == os.getuid():
                shutil.rmtree(entry, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix=f"{prefix}{os.getpid()}-") as tmp:
        yield Path(tmp)

"""A cgroup of its own for every server, where the machine has a writable cgroup v2 hierarchy.

Why: a process group and an environment tag can both be left (`setsid`, `env -i`), and the
parent-death signal reaches only the process the harness started, so a wrapper's children
(`sh -c`, `npx`) used to survive a SIGKILL of the harness. Membership of a cgroup is inherited
by every descendant and cannot be left by an unprivileged process, and `cgroup.kill` (Linux
5.14) kills all of it at once. The harness keeps its servers' cgroups under one directory of its
own, `<its cgroup>/mcp-tempest-<pid>`, which the guardian (`targets.ownership`) empties and
removes when the harness is gone, even after a SIGKILL.

Where there is no such hierarchy (cgroup v1 only, read-only, no `cgroup.kill`), `available()`
says why and the environment tag and the process group remain the only ways to find a server's
processes.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Final

KILL_FILE: Final = "cgroup.kill"
ROOT_PREFIX: Final = "mcp-tempest-"  # a harness's own cgroup: the prefix, then its pid
_EMPTY_WAIT: Final = 2.0

_lock = threading.Lock()
_root: Path | None = None
_root_pid = 0
_why_not = ""


def _cgroup2_mount() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (a hybrid machine has it beside the v1 ones)."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        left, sep, right = line.partition(" - ")
        if sep and right.split(" ", 1)[0] == "cgroup2":
            return Path(left.split(" ")[4])
    return None


def _own_cgroup() -> str | None:
    """This process's cgroup v2 path ("0::/path" in /proc/self/cgroup)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            return line[3:]
    return None


def harness_root() -> Path | None:
    """This harness's directory of server cgroups, created on first use; None where unavailable."""
    global _root, _root_pid, _why_not
    with _lock:
        if _root_pid == os.getpid():
            return _root
        _root, _root_pid, _why_not = None, os.getpid(), ""
        mount, own = _cgroup2_mount(), _own_cgroup()
        if mount is None or own is None:
            _why_not = "no cgroup v2 hierarchy is mounted"
            return None
        parent = mount / own.lstrip("/")
        _sweep_stale(parent)
        root = parent / f"{ROOT_PREFIX}{os.getpid()}"
        try:
            root.mkdir(exist_ok=True)
        except OSError as exc:
            _why_not = f"the cgroup {parent} is not writable ({exc.strerror})"
            return None
        if not (root / KILL_FILE).exists():
            with contextlib.suppress(OSError):
                root.rmdir()
            _why_not = "the kernel has no cgroup.kill (Linux 5.14 or later)"
            return None
        _root = root
        atexit.register(_remove_root, root)
        return _root


def _remove_root(root: Path) -> None:
    """At a normal exit, after every server was reaped: the directory goes (the guardian would
    too, unless something killed it with the harness's other children)."""
    for sub in sorted(root.glob("*/"), reverse=True):
        with contextlib.suppress(OSError):
            sub.rmdir()
    with contextlib.suppress(OSError):
        root.rmdir()


def _sweep_stale(parent: Path) -> None:
    """Remove the empty server-cgroup directories of harnesses that are gone (whose guardian
    was killed with them); a directory still holding processes is left alone."""
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            name = entry.name
            pid = name.removeprefix(ROOT_PREFIX)
            if pid == name or not pid.isdigit():
                continue
            if Path(f"/proc/{pid}").exists():
                continue
            _remove_root(entry)


def available() -> tuple[bool, str]:
    """Whether servers get a cgroup of their own here, and if not, why (one clause)."""
    root = harness_root()
    return root is not None, _why_not


class ServerCgroup:
    """The cgroup of one server: everything it starts lands in it, and `kill` ends all of it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def join_fd(self) -> int:
        """An fd on `cgroup.procs`; writing b"0" to it (in the child, before exec) moves the writer in."""
        return os.open(self.path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)

    def members(self) -> list[int]:
        with contextlib.suppress(OSError):
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        return []

    def populated(self) -> bool:
        with contextlib.suppress(OSError):
            return "populated 1" in (self.path / "cgroup.events").read_text()
        return False

    def kill(self) -> None:
        """SIGKILL every process in the cgroup (and in cgroups below it), at once."""
        with contextlib.suppress(OSError):
            (self.path / KILL_FILE).write_text("1")

    def remove(self) -> None:
        """Kill what is left, wait for it to be gone, and remove the directory."""
        self.kill()
        deadline = time.monotonic() + _EMPTY_WAIT
        while self.populated() and time.monotonic() < deadline:
            time.sleep(0.005)
        with contextlib.suppress(OSError):
            self.path.rmdir()


def new_server_cgroup(name: str, *, create: bool = True) -> ServerCgroup | None:
    """A fresh cgroup for one server under this harness's directory; None where unavailable.
    `create=False` leaves the directory to the server's process, which makes it and moves in
    (a fork server's child: a cgroup mkdir takes 1-2 ms the harness then does not wait for)."""
    root = harness_root()
    if root is None:
        return None
    path = root / name
    if not create:
        return ServerCgroup(path)
    try:
        path.mkdir()
    except FileExistsError:
        pass
    except OSError:
        return None
    return ServerCgroup(path)

"""Fresh Python server processes at fork speed: import the server's dependencies once, fork per process.

Why: a server on the Python SDK spends 1.3-1.5 s in interpreter start-up and imports, and a
fresh-process campaign pays that per example. For a target `python script.py ...` or
`python -m module ...`, a zygote (started with the same interpreter) imports what the script
imports at its top level, then, per fresh process, forks a child that runs the script from the
start (`runpy`, as `__main__`): module-level state of the script is new in every child, and no
child sees what another did. Only imports are shared, as they would be read from disk anyway.

How a child becomes ours: the zygote forks twice and the middle process exits, so the child is
re-parented to the harness, which is a child subreaper (`targets.ownership`): it is waited for,
signalled and reaped like any process started by `spawn`. Its stdin, stdout and stderr are
pipes the harness made and passed over a Unix socket (SCM_RIGHTS).

The start-up check refuses to fork (and the caller spawns plainly, with a note) when importing
started threads (they would not exist in the child) or the zygote cannot start at all.

What a server imports only once it runs (inside functions: its logging setup, an event loop
backend, a handler's dependencies) is learned: a child that ends on its own reports the modules
it imported, and the zygote imports them too, once a forked trial has shown that doing so starts
no thread (a refused name is never tried again). On the Python SDK server that halves what a
child costs before its first answer (47 ms to 24 ms). Only what a module does when imported is
shared this way, exactly as for the top-level imports.

Why orders are answered late: forking a large zygote twice takes about 6 ms; the harness sends
an order when a pool starts a spare and reads the pid when the spare is taken (`ForkOrder`),
so that wait is off the harness's thread.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

import orjson

from mcp_tempest.targets import ownership
from mcp_tempest.targets.cgroups import ServerCgroup, new_server_cgroup
from mcp_tempest.targets.processes import COVERAGE_CONTEXT_VAR, ManagedProcess, SpawnError, register, spawn
from mcp_tempest.targets.stderr_ring import capture

DISABLE_VAR: Final = "MCP_TEMPEST_NO_FORK_SERVER"
_READY_TIMEOUT: Final = 60.0

# The zygote: argv = [interpreter, "-c", ZYGOTE, control fd, "script"|"module", path-or-name, *server args]
ZYGOTE: Final = r'''
import ast, os, select, signal, socket, sys, threading, array, json, runpy, importlib.util
ctl = socket.socket(fileno=int(sys.argv[1]))
kind, what, server_args = sys.argv[2], sys.argv[3], sys.argv[4:]
harness = os.getppid()

def top_level_imports(path):
    try:
        tree = ast.parse(open(path, "rb").read())
    except (OSError, SyntaxError, ValueError):
        return []
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names

# A code-coverage plan (targets/code_coverage.py): what runs here before any fork (the pre-imports
# and what is learned later) is measured and saved here, once; each child measures only itself.
coverage_rc = os.environ.get("MCP_TEMPEST_COVERAGE_RC", "")
zygote_cov = None
if coverage_rc:
    try:
        import coverage
        zygote_cov = coverage.Coverage(config_file=coverage_rc, data_suffix=True)
        zygote_cov.set_option("run:sigterm", False)  # each child sets its own (measure_child)
        # no context of its own: the zygote started with the first property's, and each child
        # switches to the context of the property that ordered it (child)
        zygote_cov.set_option("run:context", None)
        zygote_cov.start()
    except Exception as exc:
        print(f"code coverage off in the fork server: {exc}", file=sys.stderr)
        zygote_cov = coverage_rc = None

def measured_here(step):
    if zygote_cov is None:
        return step()
    zygote_cov.start()
    try:
        return step()
    finally:
        zygote_cov.stop()
        zygote_cov.save()

def measure_child():
    # The zygote's Coverage, started again with a data file of its own (host, pid, random), as
    # `start()` makes one the first time; its collector is empty, since the zygote saved (and so
    # flushed) all it measured, and it keeps what the zygote learned about which files are
    # measured. A new Coverage here costs 10-150 ms before the first answer (its collector records
    # the stack with `inspect`, which walks every loaded module) and asks that again of every file
    # the server runs. coverage.py's own fork handling is no substitute: a data file that finds
    # itself in a new process starts a new file but forgets to mark it as branch data.
    cov = zygote_cov
    try:
        if hasattr(cov, "_init_data") and hasattr(getattr(cov, "_collector", None), "use_data"):
            cov._data = None
            cov._init_data(True)
            cov._collector.use_data(cov._data, cov.config.context)
        else:  # another coverage.py: a Coverage of its own after all
            cov = coverage.Coverage(config_file=coverage_rc, data_suffix=True)
            cov.set_option("run:sigterm", False)
            cov.set_option("run:context", None)
        cov.start()
    except Exception as exc:
        print(f"code coverage off in this process: {exc}", file=sys.stderr)
        return None

    def save_then_die(signum, frame):  # what `sigterm = true` does in a spawned server
        try:
            cov.stop()
            cov.save()
        except Exception:
            pass
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
    signal.signal(signal.SIGTERM, save_then_die)
    return cov

if kind == "script":
    sys.path[0] = os.path.dirname(os.path.abspath(what))
    source = what
else:
    sys.path[0] = os.getcwd()
    spec = importlib.util.find_spec(what)
    source = spec.origin if spec is not None and spec.origin else ""
    if spec is not None and spec.submodule_search_locations:
        main = importlib.util.find_spec(what + ".__main__")
        source = main.origin if main is not None and main.origin else source
for name in top_level_imports(source) if source else []:
    try:
        __import__(name)
    except BaseException:
        pass
if zygote_cov is not None:
    zygote_cov.stop()
    zygote_cov.save()
threads = threading.active_count()
ctl.sendall(json.dumps({"ready": threads == 1, "threads": threads}).encode() + b"\n")
if threads != 1:
    sys.exit(0)

# Children write the names of the modules they imported to learn_w, a line of at most LEARN_LINE
# bytes per write (under PIPE_BUF, so lines of two children never interleave); never blocking.
learn_r, learn_w = os.pipe()
os.set_blocking(learn_r, False)
os.set_blocking(learn_w, False)
LEARN_LINE = 4000
refused = set()

def report_imports(before):
    line = b""
    for name, module in list(sys.modules.items()):
        if name in before or name == "__main__" or getattr(module, "__spec__", None) is None:
            continue
        word = name.encode("utf-8", "replace") + b" "
        if len(line) + len(word) > LEARN_LINE:
            os.write(learn_w, line + b"\n")
            line = b""
        line += word[:LEARN_LINE]
    if line:
        os.write(learn_w, line + b"\n")

def learn(names):
    names = sorted(n for n in names if n not in sys.modules and n not in refused)
    if not names:
        return
    r, w = os.pipe()
    trial = os.fork()
    if trial == 0:  # import them in a throw-away copy first: one that starts a thread must not be here
        os.close(r)
        signal.alarm(10)
        for name in names:
            try:
                __import__(name)
            except BaseException:
                pass
        alone = threading.active_count() == 1 and len(os.listdir("/proc/self/task")) == 1
        os.write(w, b"1" if alone else b"0")
        os._exit(0)
    os.close(w)
    with open(r, "rb") as f:
        verdict = f.read(1)
    os.waitpid(trial, 0)
    if verdict != b"1":
        refused.update(names)
        return
    measured_here(lambda: import_all(names))

def import_all(names):
    for name in names:
        try:
            __import__(name)
        except BaseException:
            refused.add(name)

def child(fds, tag, cgroup, isolate, go, context):
    before = set(sys.modules)
    os.close(learn_r)
    os.setsid()
    if cgroup:  # the server's own cgroup (targets.cgroups): whatever it starts stays in it
        try:
            os.mkdir(os.path.dirname(cgroup))
        except OSError:
            pass
        try:
            with open(cgroup, "w") as f:
                f.write("0")
        except OSError:
            pass
    if isolate:  # --isolate-network: a namespace of its own with loopback up (as targets.netns does)
        import ctypes, fcntl, struct
        if ctypes.CDLL(None, use_errno=True).unshare(0x40000000) != 0:
            os._exit(126)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            flags = struct.unpack("16sh14x", fcntl.ioctl(s.fileno(), 0x8913, struct.pack("16sh14x", b"lo", 0)))[1]
            fcntl.ioctl(s.fileno(), 0x8914, struct.pack("16sh14x", b"lo", flags | 1))
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    ctl.close()
    os.environ["MCP_TEMPEST_OWNER"] = tag
    if "random" in sys.modules:  # a fresh process draws its own seed; a fork would repeat the zygote's
        sys.modules["random"].seed()
    import ctypes
    # The zygote closes `go` once it has reaped the middle process, so by then this process is the
    # harness's child; then it dies with the harness.
    os.read(go, 1)
    os.close(go)
    try:
        ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)
    except Exception:
        pass
    if os.getppid() != harness:
        os._exit(137)
    code = 0
    child_cov = measure_child() if zygote_cov is not None else None
    if child_cov is not None and context:
        try:
            child_cov.switch_context(context)  # whose lines these are: the property that ordered it
        except Exception:
            pass
    try:
        if kind == "script":
            sys.argv = [what, *server_args]
            runpy.run_path(what, run_name="__main__")
        else:
            sys.argv = [what, *server_args]
            runpy.run_module(what, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    if child_cov is not None:  # os._exit below skips atexit, where coverage would save
        try:
            child_cov.stop()
            child_cov.save()
        except Exception:
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    try:
        report_imports(before)
    except Exception:
        pass
    os._exit(code)

heard = b""
while True:
    readable = select.select([ctl, learn_r], [], [])[0]
    if learn_r in readable:
        try:
            while True:
                chunk = os.read(learn_r, 65536)
                if not chunk:
                    break
                heard += chunk
        except BlockingIOError:
            pass
        lines, _, heard = heard.rpartition(b"\n")
        if lines:
            learn({n for n in lines.decode("utf-8", "replace").split()})
        if ctl not in readable:
            continue
    fds = array.array("i")
    try:
        msg, anc, _flags, _addr = ctl.recvmsg(4096, socket.CMSG_SPACE(3 * fds.itemsize))
    except OSError:
        break
    if not msg:
        break
    for level, kind_, data in anc:
        if level == socket.SOL_SOCKET and kind_ == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    order = json.loads(msg)
    tag, cgroup, isolate = order["tag"], order.get("cgroup", ""), order.get("isolate", False)
    context = order.get("context", "")
    r, w = os.pipe()
    go_r, go_w = os.pipe()
    middle = os.fork()
    if middle == 0:
        os.close(r)
        os.close(go_w)
        pid = os.fork()
        if pid == 0:
            os.close(w)
            child(list(fds), tag, cgroup, isolate, go_r, context)
        os.write(w, str(pid).encode())
        os._exit(0)
    os.close(w)
    os.close(go_r)
    pid = int(os.read(r, 64) or b"0")
    os.close(r)
    os.waitpid(middle, 0)
    os.close(go_w)
    for fd in fds:
        os.close(fd)
    ctl.sendall(json.dumps({"pid": pid}).encode() + b"\n")
'''


def applies(argv: Sequence[str]) -> tuple[str, str, list[str]] | None:
    """("script", path, args) or ("module", name, args) when `argv` is a plain Python run of a
    script or module (no interpreter options we would have to imitate); else None."""
    if len(argv) < 2:
        return None
    exe = shutil.which(argv[0]) or argv[0]
    name = Path(exe).name
    if not (name.startswith("python") and all(c.isdigit() or c == "." for c in name[6:])):
        return None
    if argv[1] == "-m" and len(argv) >= 3:
        return "module", argv[2], list(argv[3:])
    if argv[1].endswith(".py") and Path(argv[1]).is_file():
        return "script", argv[1], list(argv[2:])
    return None


def disabled() -> bool:
    return os.environ.get(DISABLE_VAR, "") not in ("", "0")


class _ForkedPopen:
    """The part of `subprocess.Popen` that ManagedProcess uses, for a child the zygote forked."""

    def __init__(self, pid: int, stdin_fd: int, stdout_fd: int) -> None:
        self.pid = pid
        self.stdin = os.fdopen(stdin_fd, "wb", buffering=0)
        self.stdout = os.fdopen(stdout_fd, "rb", buffering=0)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            with contextlib.suppress(ChildProcessError):
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired([str(self.pid)], timeout or 0.0)
            time.sleep(0.005)
        assert self.returncode is not None
        return self.returncode


class ForkServer:
    """One zygote for one Python target command; `spawn()` is a fresh server process."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str] | None = None, *,
                 isolate_network: bool = False) -> None:
        plan = applies(argv)
        if plan is None:
            raise SpawnError(f"not a Python script or module command: {argv!r}")
        self.argv = list(argv)
        self.note = ""
        self.isolate_network = isolate_network
        kind, what, args = plan
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._ctl = ours
        self._lock = threading.Lock()
        self._buf = b""
        self._waiting: deque[ForkOrder] = deque()  # sent, not yet answered
        self._unclaimed: list[ForkOrder] = []  # sent, their process not yet handed out
        try:
            self._zygote: ManagedProcess = spawn(
                [argv[0], "-c", ZYGOTE, str(theirs.fileno()), kind, what, *args], env=env,
                pass_fds=(theirs.fileno(),), pipes=False,  # what imports print goes to the stderr ring
                # isolated, the zygote too: what its imports do cannot reach out either
                isolate_network=isolate_network,
            )
        finally:
            theirs.close()
        ours.settimeout(_READY_TIMEOUT)
        try:
            hello = self._read()
        except (OSError, ValueError) as exc:
            self.close()
            raise SpawnError(f"the fork server did not start ({exc})") from None
        if not hello.get("ready"):
            self.close()
            raise SpawnError(f"importing the server started {hello.get('threads', '?')} threads; "
                             "threads do not survive a fork")

    def _read(self) -> dict[str, object]:
        while b"\n" not in self._buf:
            chunk = self._ctl.recv(4096)
            if not chunk:
                raise ValueError("the fork server exited" + _tail(self._zygote))
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        data = orjson.loads(line)
        if not isinstance(data, dict):
            raise ValueError("bad answer from the fork server")
        return data

    def spawn(self) -> ManagedProcess:
        """A fresh server process forked from the zygote; SpawnError when that fails."""
        return self.order().process()

    def order(self) -> ForkOrder:
        """Ask for a fresh server process without waiting for the fork; SpawnError when the zygote
        cannot be asked. Orders are answered in the order they were sent."""
        ownership.become_subreaper()
        ownership.ensure_guardian()
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        tag = ownership.new_tag()
        cgroup = new_server_cgroup(tag, create=False)
        order = ForkOrder(self, (in_w, out_r, err_r), tag, cgroup)
        self._unclaimed.append(order)
        request = {"tag": tag, "cgroup": str(cgroup.path / "cgroup.procs") if cgroup is not None else "",
                   "isolate": self.isolate_network,
                   # what the harness is doing as it orders (a property's name): the child's coverage context
                   "context": os.environ.get(COVERAGE_CONTEXT_VAR, "")}
        try:
            with self._lock:
                self._ctl.sendmsg([orjson.dumps(request)],
                                  [(socket.SOL_SOCKET, socket.SCM_RIGHTS, _fd_bytes(in_r, out_w, err_w))])
                self._waiting.append(order)
        except OSError as exc:
            order.settle(None, f"the fork server failed: {exc}")
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        return order

    def answer(self, order: ForkOrder) -> None:
        """Read the zygote's answers up to `order`'s (the earlier ones settle their own orders)."""
        with self._lock:
            while not order.settled:
                if not self._waiting:
                    order.settle(None, "the fork server lost an order")
                    break
                head = self._waiting.popleft()
                try:
                    answer = self._read()
                except (OSError, ValueError) as exc:
                    head.settle(None, f"the fork server failed: {exc}")
                    while self._waiting:  # the stream is broken: no later answer will come either
                        self._waiting.popleft().settle(None, f"the fork server failed: {exc}")
                    continue
                pid = int(answer.get("pid") or 0)  # type: ignore[call-overload]
                head.settle(pid if pid > 0 else None, "the fork server could not fork")

    def alive(self) -> bool:
        return self._zygote.running()

    def close(self) -> None:
        # An order still unanswered may have a forked child: it is ours to end, not to orphan.
        with contextlib.suppress(Exception):
            if self._waiting:
                last = self._waiting[-1]
                self.answer(last)
        for order in list(self._unclaimed):
            order.cancel()
        with contextlib.suppress(OSError):
            self._ctl.close()
        end_process(self._zygote)


class ForkOrder:
    """A fresh process asked of a ForkServer: the pipes and cgroup are ours at once, the pid comes
    with the zygote's answer, read by `process()`."""

    def __init__(self, server: ForkServer, fds: tuple[int, int, int], tag: str,
                 cgroup: ServerCgroup | None) -> None:
        self._server = server
        self._fds = fds  # the harness's ends: the child's stdin, stdout and stderr
        self._tag = tag
        self._cgroup = cgroup
        self._process: ManagedProcess | None = None
        self._error = ""
        self.settled = False

    def settle(self, pid: int | None, error: str) -> None:
        self.settled = True
        if pid is not None:
            in_w, out_r, err_r = self._fds
            popen = _ForkedPopen(pid, in_w, out_r)
            self._process = register(ManagedProcess(self._server.argv, popen, capture(err_r), self._tag,  # type: ignore[arg-type]
                                                    self._cgroup))
            return
        self._error = error
        for fd in self._fds:
            os.close(fd)
        if self._cgroup is not None:
            self._cgroup.remove()

    def cancel(self) -> None:
        """End the process if it was forked; `process()` raises from now on."""
        with contextlib.suppress(SpawnError):
            end_process(self.process())
        self._process, self._error = None, "the fork server was closed"

    def process(self) -> ManagedProcess:
        """The forked process; SpawnError when the zygote did not fork it."""
        if not self.settled:
            self._server.answer(self)
        with contextlib.suppress(ValueError):
            self._server._unclaimed.remove(self)
        if self._process is None:
            raise SpawnError(self._error)
        return self._process


def end_process(proc: ManagedProcess) -> None:
    """End a process nobody talked to (a spare, the zygote) at once: a short grace, then signals."""
    proc.reap(grace=0.5, term_grace=0.5)
    proc.close_log()
    proc.close_pipes()


def _fd_bytes(*fds: int) -> bytes:
    import array

    return array.array("i", fds).tobytes()


def _tail(proc: ManagedProcess) -> str:
    tail = proc.stderr_tail(2048).decode("utf-8", "replace").strip().splitlines()
    return f"; its output ends: {tail[-1][:200]}" if tail else ""


def start_fork_server(argv: Sequence[str], env: Mapping[str, str] | None = None, *,
                      isolate_network: bool = False) -> tuple[ForkServer | None, str]:
    """A fork server for `argv` when one applies and works, else None and why (a note for the user)."""
    if disabled() or applies(argv) is None or not sys.platform.startswith("linux"):
        return None, ""
    try:
        return ForkServer(argv, env, isolate_network=isolate_network), ""
    except SpawnError as exc:
        return None, f"fork server off, spawning each process: {exc}"

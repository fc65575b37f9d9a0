"""Helpers shared by the fuzz tests: run the real `mcp-tempest` console script, find leftovers.

Every campaign in these tests runs the command a user runs (a subprocess of this interpreter's
`mcp-tempest`), against real servers, with a fixed seed; the reference server gets a private
`--db` per test so tests never see each other's state.
"""

from __future__ import annotations

import itertools
import os
import shlex
import subprocess
import sys
from pathlib import Path

import psutil

PYTHON = sys.executable
CLI = [PYTHON, "-m", "mcp_tempest.fuzz.cli"]


def reference_stdio(db: Path, *bugs: str) -> str:
    args = [PYTHON, "-m", "mcp_tempest.targets.reference", "--transport", "stdio", "--db", str(db)]
    for bug in bugs:
        args += ["--bug", bug]
    return "stdio:" + shlex.join(args)


def reference_http(db: Path, *bugs: str) -> str:
    args = [PYTHON, "-m", "mcp_tempest.targets.reference", "--transport", "http", "--port", "{port}", "--db", str(db)]
    for bug in bugs:
        args += ["--bug", bug]
    return "http+spawn:" + shlex.join(args)


def run_cli(*args: str, timeout: float = 240.0, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def processes_mentioning(tag: str) -> list[psutil.Process]:
    """Live processes whose command line contains `tag` (a test's private --db path)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if tag in " ".join(proc.info["cmdline"] or []):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def property_row(stdout: str, prop: str) -> str:
    """A property's summary row with the notes the terminal put on indented lines under it (a row
    and its notes stay within 100 columns), joined into one line."""
    lines = stdout.splitlines()
    row = next(i for i, line in enumerate(lines) if line.strip().startswith(f"{prop}["))
    notes = itertools.takewhile(lambda line: line.startswith("      "), lines[row + 1:])
    return " ".join([lines[row].rstrip(), *(line.strip() for line in notes)])


def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


# The reference server behind a proxy that follows every result with a stray id-less error: a
# HEURISTIC (RPC-07: no malformed frame was outstanding to draw it) and nothing stronger, the
# fixture for --fail-on and observations.
STRAY_ERROR_PROXY = """
import os, subprocess, sys, threading
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def pump_out():
    for line in child.stdout:
        sys.stdout.buffer.write(line)
        if b'"result"' in line:
            sys.stdout.buffer.write(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"stray"}}\\n')
        sys.stdout.buffer.flush()
    os._exit(child.wait())
threading.Thread(target=pump_out, daemon=True).start()
for line in sys.stdin.buffer:
    child.stdin.write(line); child.stdin.flush()
child.stdin.close()
child.wait()
"""


def stray_error_target(tmp: Path) -> str:
    """stdio target: the reference server, each result followed by a stray id-less error."""
    proxy = tmp / "stray_error_proxy.py"
    proxy.write_text(STRAY_ERROR_PROXY)
    return f"stdio:{PYTHON} {proxy} " + reference_stdio(tmp / "stray.sqlite3").removeprefix("stdio:")

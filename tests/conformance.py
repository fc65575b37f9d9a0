"""Run the official MCP conformance suite (npm `@modelcontextprotocol/conformance`) against a URL.

Why: our own oracle should agree with the project's official checks where they overlap. The
suite is a Node CLI; this wraps one `conformance server --scenario S` run per scenario, reads the
`checks.json` it writes (not the coloured console text), and reduces it to pass/fail.

A scenario passes when the CLI exits 0 and no check has status FAILURE. WARNING (a SHOULD) and
SKIPPED (not applicable) do not fail it; they are listed in the output text. Every run uses
`--spec-version 2026-07-28` so the stateless wire is exercised even for scenarios that also
exist for 2025-11-25.

Needs `.ci/install-servers.sh` (the npm package and a Node >= 22). `tests/` must be on sys.path
(pytest puts it there) because the paths come from `servers/catalog.py`.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import orjson
from servers.catalog import CONFORMANCE_ENTRY, node_binary

SPEC_VERSION = "2026-07-28"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
# The scenarios the Foundation issue relies on; the suite has many more (`conformance list`).
FOUNDATION_SCENARIOS = (
    "server-stateless",
    "caching",
    "dns-rebinding-protection",
    "sep-2164-resource-not-found",
    # SEP-2243 header checks, including optional whitespace around a value (RFC 9110 §5.5, issue 32)
    "http-header-validation",
)


class ConformanceUnavailable(RuntimeError):
    """The suite or a Node >= 22 is not installed (run .ci/install-servers.sh)."""


@dataclass(frozen=True)
class Check:
    """One check from checks.json: its id, SUCCESS/FAILURE/WARNING/SKIPPED, and why."""

    id: str
    status: str
    message: str


@dataclass(frozen=True)
class ScenarioRun:
    """The outcome of one scenario run."""

    scenario: str
    passed: bool
    exit_code: int | None  # None when the run was killed at the timeout
    checks: tuple[Check, ...]
    output: str  # summary lines, then the CLI's own text without colour codes

    def with_status(self, status: str) -> list[Check]:
        return [c for c in self.checks if c.status == status]


def conformance_argv(url: str, scenario: str, out_dir: Path, timeout: float) -> list[str]:
    """The exact command line for one scenario (useful to reproduce a run by hand)."""
    node = node_binary()
    if node is None or not CONFORMANCE_ENTRY.exists():
        raise ConformanceUnavailable("conformance suite not installed: run bash .ci/install-servers.sh")
    return [
        node,
        str(CONFORMANCE_ENTRY),
        "server",
        "--url",
        url,
        "--scenario",
        scenario,
        "--spec-version",
        SPEC_VERSION,
        "--timeout",
        str(max(1000, int(timeout * 1000))),
        "-o",
        str(out_dir),
    ]


def _check_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or (parts.hostname or "") not in LOOPBACK_HOSTS:
        raise ValueError(f"conformance target must be an http URL on loopback, got {url!r}")


def _read_checks(out_dir: Path) -> tuple[Check, ...]:
    files = sorted(out_dir.glob("*/checks.json"))
    if not files:
        return ()
    raw = orjson.loads(files[-1].read_bytes())
    if not isinstance(raw, list):
        return ()
    return tuple(
        Check(
            id=str(item.get("id", "?")),
            status=str(item.get("status", "?")),
            message=str(item.get("errorMessage") or item.get("description") or ""),
        )
        for item in raw
        if isinstance(item, dict)
    )


def _summary(scenario: str, passed: bool, exit_code: int | None, checks: tuple[Check, ...]) -> str:
    counts = {
        s: sum(1 for c in checks if c.status == s) for s in ("SUCCESS", "FAILURE", "WARNING", "SKIPPED")
    }
    head = (
        f"{scenario}: {'PASS' if passed else 'FAIL'} (exit {exit_code}, {len(checks)} checks: "
        f"{counts['SUCCESS']} ok, {counts['FAILURE']} failed, {counts['WARNING']} warnings, "
        f"{counts['SKIPPED']} skipped)"
    )
    lines = [head] + [
        f"  {c.status} {c.id}: {c.message}" for c in checks if c.status in ("FAILURE", "WARNING")
    ]
    return "\n".join(lines)


def run_scenario(url: str, scenario: str, timeout: float = 60.0) -> ScenarioRun:
    """Run one scenario against `url`; never raises for a failing or hanging server."""
    _check_url(url)
    with tempfile.TemporaryDirectory(prefix="tempest-conformance-") as tmp:
        out_dir = Path(tmp)
        argv = conformance_argv(url, scenario, out_dir, timeout)
        env = {**os.environ, "NO_COLOR": "1", "FORCE_COLOR": "0"}
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
        deadline = time.monotonic() + timeout + 15.0  # the CLI's own timeout plus start-up
        try:
            raw, _ = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
            exit_code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raw, _ = proc.communicate()
            exit_code = None
        text = ANSI.sub("", raw.decode("utf-8", "replace"))
        if exit_code is None:
            text += f"\n(conformance run killed after {timeout + 15.0:.0f} s)"
        checks = _read_checks(out_dir)
    passed = exit_code == 0 and bool(checks) and not any(c.status == "FAILURE" for c in checks)
    return ScenarioRun(
        scenario=scenario,
        passed=passed,
        exit_code=exit_code,
        checks=checks,
        output=_summary(scenario, passed, exit_code, checks) + "\n\n" + text,
    )


def run_conformance(url: str, scenarios: list[str], timeout: float) -> dict[str, tuple[bool, str]]:
    """Run each scenario (one CLI process each) and map it to (passed, output text).

    `timeout` is per scenario, in seconds. Raises ValueError for a non-loopback URL or an empty
    list, ConformanceUnavailable when the suite is not installed.
    """
    if not scenarios:
        raise ValueError("no conformance scenarios given")
    results: dict[str, tuple[bool, str]] = {}
    for scenario in scenarios:
        run = run_scenario(url, scenario, timeout)
        results[scenario] = (run.passed, run.output)
    return results

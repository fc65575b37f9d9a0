"""The README is the user's manual: every command it shows must do what it says, and CI must run its
test command.

Why a table: `COMMANDS` maps every command line of the README's shell blocks to how this file runs
it, so a command added to the README without an entry fails `test_every_readme_command_is_covered`
("README command not covered: ..."), and a command that stops working fails its own test. An entry
is a `Run` (as written, or shortened by `sub`/`append` saying why in `why`) or a `Reason`: one
sentence saying why the command cannot run here (a package registry, a second host) and what, if
anything, runs in its place. Every run starts in a fresh directory laid out like a
clone's root (`tests/` and `load/` linked in) that holds the stand-ins the README's examples name:
`my_server.py` (the reference server; over HTTP when given `--port`, as `http+spawn:` starts it),
`my_client.py` (the reference client), `./new/server` (the reference server with `--workspace`: a
release that added four tools), `./old/server` (the reference server) and `old/bin/python` (this
interpreter, standing in for the old release's venv). The default run cuts the long budgets (each
cut says so); the `nightly` marker runs those commands as written.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent
SHELL_LANGS = frozenset({"sh", "bash", "console", "shell"})
# A server the test stopped with SIGTERM: a clean exit, or killed by the signal (as itself or via bash).
STOPPED = (0, -signal.SIGTERM, 128 + signal.SIGTERM)
DISCOVER = ('{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{'
            '"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
            '"io.modelcontextprotocol/clientCapabilities":{},'
            '"io.modelcontextprotocol/clientInfo":{"name":"readme-test","version":"0"}}}}\n')


def readme_commands(text: str = README) -> list[str]:
    """Every command of the README's shell blocks, in order: each line but blanks and `#` comments
    (a `console` block: its `$ ` lines), `\\` continuations joined."""
    commands: list[str] = []
    for lang, body in re.findall(r"^```(\w*)[^\n]*\n(.*?)^```", text, flags=re.S | re.M):
        if lang not in SHELL_LANGS:
            continue
        pending = ""
        for raw in body.splitlines():
            line = raw.strip()
            if not pending:
                if lang == "console":
                    if not line.startswith("$ "):
                        continue  # the output shown under a command
                    line = line[2:].strip()
                if not line or line.startswith("#"):
                    continue
            if line.endswith("\\"):
                pending += line[:-1].rstrip() + " "
                continue
            commands.append(pending + line)
            pending = ""
    return commands


@dataclass(frozen=True)
class Reason:
    """Why a README command is not run here as written: one sentence, naming the stand-in if any."""

    why: str


@dataclass(frozen=True)
class Run:
    """How the test runs one README command, and what must come back from it."""

    rc: int | tuple[int, ...]
    expect: str  # a regex (multiline) that must match its stdout or stderr
    why: str = ""  # why it is not run as written (required with sub or append), or what stands in
    sub: tuple[tuple[str, str], ...] = ()  # (README text, what runs instead): a cut budget, a port
    append: str = ""  # options added at the end
    nightly: bool = False  # the long form, under the nightly marker
    needs: tuple[str, ...] = ()  # PREPARE keys: files or servers earlier commands make
    requires: str = ""  # `jq` (on PATH) or `python:mcp` (importable): skipped, saying so, when absent
    stdin: str | None = None
    mode: str = "run"  # run: waited for; server: started, stopped at the end; job: waited for at the end
    ready: str = ""  # a loopback port (`{port_a}`) the server must accept connections on
    then: str = ""  # a command run against the ready server: exit 0, its output searched as well
    group: str = ""  # lines run together in one directory, in README order
    files: tuple[tuple[str, str], ...] = ()  # (glob, regex): a file it wrote, and what it must hold
    timeout: float = 240

    @property
    def as_written(self) -> bool:
        return not (self.sub or self.append)

    def command(self, readme: str, ctx: dict[str, str]) -> str:
        """The command line this entry runs, the README's own braces (`{port}`) left alone."""
        cmd = readme
        for old, new in self.sub:
            assert old in cmd, f"{old!r} is not in {cmd!r}"
            cmd = cmd.replace(old, new.format(**ctx))
        if self.mode != "run":
            cmd = cmd.removesuffix("&").rstrip()  # the test starts it in the background itself
        if self.append:
            cmd = f"{TRAILING_COMMENT.sub('', cmd)} {self.append.format(**ctx)}"
        return cmd


Entry = Run | Reason
TRAILING_COMMENT = re.compile(r"\s+#\s[^'\"]*$")  # `cmd   # what it measures`: options go before it

MUTANT = ('mcp-tempest fuzz --target "stdio:mcp-tempest serve --bug null-id-accepted" --properties ids '
          '--max-examples 20 --seed 1')
CLIENT_BUG = ('mcp-tempest fuzz-client --client "python tests/clients/ref_client.py --bug drop-request-state '
              '{url}" --max-examples 10 --seed 7')
SAVE_V1 = "mcp-tempest catalogue --json > v1.json    # the release users approved, saved once"
SHORT_LOAD = "mcp-tempest load --run-time 1s"  # the default run's `load --run-time 20s`: one run, two uses
AUTH_TARGET = ('"http+spawn:python -m mcp_tempest.targets.reference --transport http --port {port} '
               '--auth-issuer {issuer}"')
STAND_INS = "my_server.py is the stand-in (the reference server)"
ONE_SECOND = "1 s instead of a minute: the same run, gates and reports, shorter"
LOAD_LINE = r"^load: \d+ requests, 0 failures"
# Why a cut --duration becomes an example budget: a property that gets no example in its share of
# a few seconds (start-up on a busy machine eats it) fails the run with exit 2, by design.
SHORT_DURATION = "; a few seconds of --duration on a busy machine can leave a property no example (exit 2)"
GATE_NOTE = "; a latency gate on a shared 2-core machine may be crossed, so exit 0 or 1 (never 2)"

COMMANDS: dict[str, tuple[Entry, ...]] = {
    # --- Quick start
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && mcp-tempest fuzz --max-examples 200 --seed 1": (
        Reason("It makes a venv and installs mcp-tempest from the package registries (beyond loopback); its "
               "last command is the fuzz section's `mcp-tempest fuzz --max-examples 200 --seed 1`, run there."),),
    MUTANT: (
        Run(1, r"^  finding RPC-01-\w+: MUST RPC-01 JSON that is not a valid request was served \(a result\)",
            files=(("tempest-out/fuzz-*/repro/RPC-01-*.json", r'"rule": "RPC-01"'),)),),
    'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test]" && bash .ci/install-servers.sh && python -m pytest -q -n 2 --dist loadfile': (
        Reason("It is the whole test suite, this file included, after installs from the package registries; "
               ".ci/run runs it verbatim (test_ci_runs_the_readme_test_command_verbatim)."),),
    'mcp-tempest probe --target "stdio:python tests/servers/sdk_server.py"': (
        Run(0, r"^probe: dual 2026-07-28 \+ 2025-11-25, 2 tools", requires="python:mcp"),),
    'mcp-tempest fuzz --target "stdio:python tests/servers/sdk_server.py" --max-examples 100 --seed 1': (
        Run(1, r"^  finding MRTR-05-\w+: MUST MRTR-05", requires="python:mcp",
            sub=(("--max-examples 100", "--properties mrtr --max-examples 3"),),
            why="the mrtr property's 3 examples instead of all seven's 100: its coverage phase shows the SDK's "
                "MRTR-05"),
        Run(1, r"^fuzz: \d+ examples, 7 properties, [1-9]\d* findings?", requires="python:mcp", nightly=True,
            timeout=600),),
    # --- fuzz
    "mcp-tempest fuzz --max-examples 200 --seed 1": (
        Run(0, r"^fuzz: 20 examples, 7 properties, 0 findings", sub=(("200", "20"),),
            why="20 examples instead of 200: every property on both transports, a quarter of the time",
            files=(("tempest-out/fuzz-*/findings.json", r'"findings": \[\]'),)),
        Run(0, r"^fuzz: 200 examples, 7 properties, 0 findings", nightly=True),),
    "mcp-tempest fuzz --duration 600 --workers 2 --out nightly/": (
        Run(0, r"^fuzz: 20 examples, 7 properties, 0 findings", sub=(("--duration 600", "--max-examples 20 --seed 1"),),
            why=f"20 examples instead of 10 minutes (the same two workers and report folder){SHORT_DURATION}",
            files=(("nightly/junit.xml", r"<testsuite"), ("nightly/findings.json", r'"findings": \[\]'))),
        Run(0, r"^fuzz: \d+ examples, 7 properties, 0 findings", nightly=True, timeout=900,
            files=(("nightly/junit.xml", r"<testsuite"),)),),
    'mcp-tempest fuzz --target "http+spawn:mcp-tempest serve --transport http --port {port}" --properties handoff,mrtr --max-examples 50 --seed 3': (
        Run(0, r"^fuzz: 10 examples, 2 properties, 0 findings", sub=(("--max-examples 50", "--max-examples 10"),),
            why="10 examples instead of 50: both properties, on spawned HTTP instances"),
        Run(0, r"^fuzz: 50 examples, 2 properties, 0 findings", nightly=True),),
    # --- replay
    "mcp-tempest replay tempest-out/fuzz-<timestamp>/repro/<id>.json": (
        Run(1, r"still fails: MUST RPC-01", needs=("mutant-repro",),
            sub=(("tempest-out/fuzz-<timestamp>/repro/<id>.json", "{mutant_repro}"),),
            why="the placeholders name the repro file of the quick start's mutant campaign"),),
    'mcp-tempest replay tempest-out/fuzz-<timestamp>/repro/<id>.json --target "stdio:python my_server.py" --show': (
        Run(0, r"-> send(.|\n)*no longer fails", needs=("mutant-repro",),
            sub=(("tempest-out/fuzz-<timestamp>/repro/<id>.json", "{mutant_repro}"),),
            why=f"the placeholders name the quick start mutant's repro file; {STAND_INS}, which is fixed"),),
    # --- fuzz-client
    'mcp-tempest fuzz-client --client "python tests/clients/ref_client.py {server}" --max-examples 20 --seed 1': (
        Run(0, r"^fuzz-client: 5 examples, 0 findings", sub=(("--max-examples 20", "--max-examples 5"),),
            why="5 examples instead of 20"),
        Run(0, r"^fuzz-client: 20 examples, 0 findings", nightly=True),),
    CLIENT_BUG: (
        Run(1, r"finding MRTR-10-\w+: MUST MRTR-10", files=(("tempest-out/fuzz-client-*/repro/MRTR-10-*.json",
                                                             r'"MRTR-10"'),)),),
    'mcp-tempest replay tempest-out/fuzz-client-<timestamp>/repro/<id>.json --client "python my_client.py {server}"': (
        Run(0, r"no longer fails", needs=("client-repro",),
            sub=(("tempest-out/fuzz-client-<timestamp>/repro/<id>.json", "{client_repro}"),),
            why="the placeholders name the repro file of the drop-request-state run above; my_client.py is "
                "the stand-in (the correct reference client)"),),
    # --- probe, catalogue, frames
    "mcp-tempest probe": (Run(0, r"^probe: modern 2026-07-28, 7 tools, 1 resource, 1 prompt"),),
    'mcp-tempest probe --target "stdio:python tests/servers/sdk_server.py" --json': (
        Run(0, r'"era":\s*"dual"', requires="python:mcp"),),
    "mcp-tempest catalogue": (Run(0, r"^catalogue: \d+ tokens every turn"),),
    "mcp-tempest catalogue --json": (Run(0, r'"turn_tokens":\s*\d+'),),
    "mcp-tempest catalogue --max-tokens 2000 --max-tool-tokens 200": (Run(0, r"^catalogue: \d+ tokens every turn"),),
    "mcp-tempest catalogue --max-pages 50 --max-list-mib 4 --list-seconds 10": (
        Run(0, r"^catalogue: \d+ tokens every turn.*7 tools"),),
    SAVE_V1: (Run(0, r"^$", files=(("v1.json", r'"definitions"'),)),),  # its output is the file
    "mcp-tempest catalogue --target 'stdio:./new/server' --compare v1.json": (
        Run(0, r"^compare: 0 breaking, 0 description, 4 compatible", needs=("v1.json",),
            why="./new/server is a stand-in: the reference server with --workspace (four tools added)"),),
    "mcp-tempest catalogue --target 'stdio:./new/server' --compare 'stdio:./old/server' --fail-on breaking,description": (
        Run(0, r"^compare: 0 breaking, 0 description, 4 compatible",
            why="./new/server and ./old/server are stand-ins: the reference server with and without --workspace"),),
    "mcp-tempest frames --list": (Run(0, r"^embedded-newline\s+STDIO-02"),),
    "mcp-tempest frames --method tools/call --count 5 --seed 7": (Run(0, r'"method":"tools/call"'),),
    "mcp-tempest frames --malformed embedded-newline --count 3": (Run(0, r'^\{"raw":'),),
    "mcp-tempest frames --count 5 | jq -c .method": (Run(0, r'^"[a-z/]+"$', requires="jq"),),
    # --- load
    "mcp-tempest load --run-time 20s": (
        Run(0, LOAD_LINE, sub=(("20s", "1s"),), why="1 s instead of 20",
            files=(("tempest-out/load-*/summary.json", r'"requests"'),)),
        Run(0, LOAD_LINE, nightly=True),),
    "mcp-tempest load --run-time 60s --users 50 --instances 2 --processes 2 --fail-on 'p99_ms>50' --fail-on 'failures>0'": (
        Run((0, 1), r"^gate 'p99_ms>50': (.|\n)*^gate 'failures>0': ok", sub=(("60s", "1s"),), why=ONE_SECOND + GATE_NOTE),
        Run((0, 1), r"^gate 'failures>0': ok", nightly=True, why=GATE_NOTE),),
    "mcp-tempest load --run-time 60s --rate 500 --max-in-flight 64 --fail-on 'p99_ms>50'": (
        Run((0, 1), r"^gate 'p99_ms>50': ", sub=(("60s", "1s"),), why=ONE_SECOND + GATE_NOTE),
        Run((0, 1), r"^gate 'p99_ms>50': ", nightly=True, why=GATE_NOTE),),
    "mcp-tempest load --find-capacity --slo 'p99_ms<50' --slo 'failures<0.1%'": (
        Run(0, r"^capacity: \d+ arrivals/s held", append="--step-time 1s --start-rate 100 --rate-factor 20 --refine 0",
            why="1 s steps from 100/s, x20, no bisection: two or three steps instead of about eight of 10 s",
            files=(("tempest-out/load-*/capacity.json", r"\d"),)),
        Run(0, r"^capacity: \d+ arrivals/s held", nightly=True, timeout=900),),
    "mcp-tempest load --run-time 60s --baseline previous/summary.json --baseline-margin 20%": (
        Run((0, 1), r"p50_ms .*->", sub=(("60s", "1s"),), needs=("previous-load",),
            why="1 s against a 1 s run's summary.json as previous/; two short runs on a shared machine may "
                "differ by more than the margin, so exit 0 or 1 (never 2)"),),
    "mcp-tempest load --target 'http+spawn:./new/server --port {port}' --compare-target 'http+spawn:./old/server --port {port}'": (
        Run((0, 1), r"^verdict: (REGRESSION|NO REGRESSION|IMPROVEMENT|INCONCLUSIVE)",
            append="--run-time 4s --round-time 0.25s",
            why="stand-ins for the two builds (the reference server, with and without --workspace); 4 s in "
                "rounds of 0.25 s instead of 2 minutes; noise may read as a regression, so exit 0 or 1"),
        Run((0, 1), r"^verdict: (REGRESSION|NO REGRESSION|IMPROVEMENT|INCONCLUSIVE)", nightly=True,
            why="the stand-in builds, as written; noise may read as a regression, so exit 0 or 1"),),
    "locust -f load/users.py --master --headless --expect-workers 2 -u 200 -r 50 -t 5m --host http://SERVER:PORT/mcp --mcp-summary out/summary.json --csv out/locust --html out/locust.html": (
        Run(0, r"Aggregated", mode="job", group="locust", needs=("reference-http",),
            sub=(("--expect-workers 2", "--expect-workers 1"), ("-u 200 -r 50 -t 5m", "-u 5 -r 5 -t 3s"),
                 ("SERVER:PORT", "127.0.0.1:{server_port}")),
            append="--master-bind-port {port_a}",
            why="two hosts in the README: here the master and one worker on loopback, against a reference "
                "server on a free port, 5 users for 3 s",
            files=(("out/summary.json", r'"requests": [1-9]'), ("out/locust.html", r"<html"))),),
    "locust -f load/users.py --worker --master-host MASTER_HOST": (
        Run(0, r"Got quit message from master", mode="job", group="locust",
            sub=(("MASTER_HOST", "127.0.0.1"),), append="--master-port {port_a}",
            why="the worker on the same machine as the master, on the master's free port"),),
    # --- serve
    "mcp-tempest serve": (
        Run(0, r'"supportedVersions":\["2026-07-28"\]', stdin=DISCOVER,
            why="a server/discover request on its stdin, then end of input"),),
    "mcp-tempest serve --transport http --port 8000": (
        Run(STOPPED, r"^probe: modern 2026-07-28", mode="server", sub=(("8000", "{port_a}"),), ready="{port_a}",
            then="mcp-tempest probe --target http://127.0.0.1:{port_a}/mcp",
            why="a free loopback port instead of 8000, probed, then stopped with SIGTERM"),),
    "mcp-tempest serve --list-bugs": (Run(0, r"^null-id-accepted\s+RPC-01"),),
    # --- --auth
    f"mcp-tempest fuzz --auth --target {AUTH_TARGET}": (
        Run(0, r"^fuzz: 10 examples, 8 properties, 0 findings", append="--max-examples 10 --seed 1",
            why="10 examples instead of 200, seeded"),
        Run(0, r"^fuzz: 200 examples, 8 properties, 0 findings", nightly=True),),
    f"mcp-tempest load --auth --run-time 10s --target {AUTH_TARGET}": (
        Run(0, LOAD_LINE, sub=(("10s", "1s"),), why="1 s instead of 10"),
        Run(0, LOAD_LINE, nightly=True),),
    "mcp-tempest auth-server --port 9400 &": (
        Run(STOPPED, r"127\.0\.0\.1", mode="server", group="auth", sub=(("9400", "{port_a}"),), ready="{port_a}",
            why="a free loopback port instead of 9400; stopped with SIGTERM after the campaign"),),
    "mcp-tempest serve --transport http --port 8000 --auth-issuer http://127.0.0.1:9400 &": (
        Run(STOPPED, r"127\.0\.0\.1", mode="server", group="auth", ready="{port_b}",
            sub=(("8000", "{port_b}"), ("9400", "{port_a}")),
            why="free loopback ports instead of 8000 and 9400; stopped with SIGTERM after the campaign"),),
    "mcp-tempest fuzz --auth --auth-issuer http://127.0.0.1:9400 --target http://127.0.0.1:8000/mcp": (
        Run(0, r"^fuzz: 20 examples, \d+ properties, 0 findings", group="auth",
            sub=(("8000", "{port_b}"), ("9400", "{port_a}")), append="--max-examples 20 --seed 1",
            why="the two servers' free ports; 20 examples instead of 200, seeded"),),
    # --- your own test suite
    'pytest --pyargs mcp_tempest.fuzz.properties.suite --mcp-target "stdio:python my_server.py"': (
        Run(0, r"^=+ 2 passed, \d+ deselected", append="-p no:cacheprovider --hypothesis-seed 1 -k lists",
            why=f"{STAND_INS}; one property of seven (its probes and its Hypothesis test), seeded, and no "
                ".pytest_cache left behind"),
        Run(0, r"^=+ \d+ passed", nightly=True, why=STAND_INS),),
    'pip install "mcp-tempest[hypofuzz]"': (
        Reason("It installs from PyPI (beyond loopback); CI installs the extra in .ci/extras-newest.sh and "
               ".ci/lowest.sh."),),
    'MCP_TEMPEST_TARGET="stdio:python my_server.py" hypothesis fuzz -n 2 -- --pyargs mcp_tempest.fuzz.properties.suite -p no:locust': (
        Reason("It fuzzes until stopped and needs the hypofuzz extra, absent where this file runs; "
               "tests/test_hypofuzz.py runs this command line (on a mutant, and on the reference server) "
               "where the extra is installed."),),
    # --- nightly CI
    'mcp-tempest fuzz --target "stdio:python my_server.py" --duration 900 --database .tempest-db --out tempest-report': (
        Run(0, r"^fuzz: 20 examples, 7 properties, 0 findings",
            sub=(("--duration 900", "--max-examples 20 --seed 1"),),
            why=f"{STAND_INS}; 20 examples instead of 15 minutes{SHORT_DURATION}",
            files=(("tempest-report/results.sarif", r'"runs"'), ("tempest-report/summary.md", r"\S"),
                   ("tempest-report/junit.xml", r"<testsuite"), (".tempest-db/*", r""))),
        Run(0, r"^fuzz: \d+ examples, 7 properties, 0 findings", nightly=True, timeout=1200, why=STAND_INS,
            files=(("tempest-report/results.sarif", r'"runs"'),)),),
    # --- before a release
    'python -m venv old && old/bin/pip install "my-server==1.4.0"   # the release users run now': (
        Reason("It installs a release of your server from PyPI (beyond loopback); the stand-in old/bin/python "
               "is this interpreter, which the three commands after it run with my_server.py."),),
    'mcp-tempest catalogue --target "stdio:python -m my_server" --compare "stdio:old/bin/python -m my_server"': (
        Run(0, r"^compare: 0 breaking, 0 description, 0 compatible",
            why="stand-ins: my_server.py, the same on both sides (old/bin/python is this interpreter)"),),
    'mcp-tempest fuzz --target "stdio:python -m my_server" --compare-target "stdio:old/bin/python -m my_server" --duration 600': (
        Run(0, r"^fuzz: 20 examples, 7 properties, 0 findings",
            sub=(("--duration 600", "--max-examples 20 --seed 1"),),
            why=f"stand-ins: my_server.py on both sides, so no difference; 20 examples instead of 10 minutes"
                f"{SHORT_DURATION}"),
        Run(0, r"^fuzz: \d+ examples, 7 properties, 0 findings", nightly=True, timeout=900,
            why="stand-ins: my_server.py on both sides, so no difference"),),
    'mcp-tempest load --target "http+spawn:python -m my_server --port {port}" --compare-target "http+spawn:old/bin/python -m my_server --port {port}" --run-time 4m': (
        Run((0, 1), r"^verdict: (REGRESSION|NO REGRESSION|IMPROVEMENT|INCONCLUSIVE)",
            sub=(("--run-time 4m", "--run-time 4s --round-time 0.25s"),),
            why="stand-ins: my_server.py on both sides; 4 s in rounds of 0.25 s instead of 4 minutes; noise "
                "may read as a regression, so exit 0 or 1"),
        Run((0, 1), r"^verdict: (REGRESSION|NO REGRESSION|IMPROVEMENT|INCONCLUSIVE)", nightly=True, timeout=600,
            why="stand-ins: my_server.py on both sides; noise may read as a regression, so exit 0 or 1"),),
    # --- benchmarks
    "python tests/benchmarks/bench_reference.py   # reference server vs the Python SDK, stdio and HTTP": (
        Run(0, r"^bench_reference: .*stdio [\d.]+x, http [\d.]+x", requires="python:mcp",
            append="-n 200 --seconds 0.5", why="200 round trips or 0.5 s a server instead of 2000 or 4 s"),
        Run(0, r"^bench_reference: .*stdio [\d.]+x, http [\d.]+x", requires="python:mcp", nightly=True),),
    "python tests/benchmarks/bench_strategies.py  # frames per second vs hypothesis-jsonschema (--no-hjs: ours only)": (
        Reason("As written it installs hypothesis-jsonschema into a venv of its own from PyPI (beyond loopback): "
               "it is run with --no-hjs, its own switch for our numbers only."),
        Run(0, r"^bench_strategies: tools/call frames", append="--no-hjs --frames 50 --budget 2",
            why="--no-hjs (no install); 50 frames and 2 CPU seconds a measurement instead of 500 and 15"),
        Run(0, r"^bench_strategies: tools/call frames", append="--no-hjs", nightly=True,
            why="--no-hjs: no install from PyPI"),),
    "python tests/benchmarks/bench_mutant_sweep.py  # every mutant x 5 seeds, default campaigns (nightly)": (
        Reason("Every mutant x 5 seeds takes tens of minutes (tests/test_mutant_sweep.py runs its seed 1, and "
               "seed 2 nightly): it runs as written under the nightly marker only."),
        Run(0, r"^bench_mutant_sweep: ", nightly=True, timeout=5400),),
    "python tests/benchmarks/bench_campaign.py    # fresh-process campaign vs a bare spawn loop": (
        Reason("Its verdict is a speed ratio of this machine, and even a cut run takes 10 s or more: it runs as "
               "written under the nightly marker only."),
        Run((0, 1), r"^bench_campaign: per example forked/bare.*findings 0 forked vs 0 spawned", nightly=True,
            timeout=900, why="exit 0 or 1: its speed aims depend on the machine; no finding either way"),),
    "python tests/benchmarks/bench_load.py        # load generator vs wrk and FastHttpUser (CPU/request); reference vs SDK": (
        Reason("It needs `wrk`, which neither the CI nor this machine installs (as root it runs apt-get to "
               "install it, beyond loopback); tests/test_load*.py cover the load generator itself."),),
    "python tests/benchmarks/bench_oracle.py      # oracle judgements per second": (
        Run(0, r"^bench_oracle: judge [\d.]+x", append="300", why="300 request/answer pairs instead of 3000"),
        Run(0, r"^bench_oracle: judge [\d.]+x", nightly=True),),
    "python tests/benchmarks/bench_code_coverage.py  # a campaign with server code coverage vs --no-coverage (SDK server)": (
        Reason("Two 200-example campaigns on the Python SDK server take minutes and shorter ones are too few to "
               "compare: it runs as written under the nightly marker only."),
        Run(0, r"^bench_code_coverage: measured/plain", requires="python:mcp", nightly=True, timeout=1800),),
    "python tests/benchmarks/bench_guidance.py    # two nightly runs sharing a database, per --guidance mode": (
        Reason("Its six campaigns (three guidance modes, two nights each) take about a minute even at 10 "
               "examples a night: it runs as written under the nightly marker only."),
        Run(0, r"^bench_guidance: ", nightly=True, timeout=1800),),
    "python tests/benchmarks/bench_hostile_catalogue.py  # harness peak memory and time against hostile tool lists (--quick: a tenth)": (
        Run(0, r"^bench_hostile_catalogue --quick: 22/22 runs within 300 MB, .*22/22 answered with exit 0 or 1",
            append="--quick", timeout=600, why="--quick: each size a tenth (the 50 MB description 17 MiB, still "
                                               "over the cap); the full sizes nightly"),
        Run(0, r"^bench_hostile_catalogue: 22/22 runs within 300 MB, .*22/22 answered with exit 0 or 1",
            nightly=True, timeout=2400),),
}

# --- how a unit runs


def _env() -> dict[str, str]:
    """The user's shell as the README assumes it: the venv first on PATH; no colour forced, no
    MCP_TEMPEST_* setting and no pytest worker state of ours leaking into the command."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MCP_TEMPEST_", "PYTEST_")) and k != "FORCE_COLOR"}
    env["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    return env


STAND_IN_SERVER = '''"""Stand-in for "your server" in the README's commands: mcp-tempest's reference server, over
Streamable HTTP when given --port (as an http+spawn: target starts it)."""
import os
import sys

from mcp_tempest.targets.reference.cli import serve_main

args = sys.argv[1:]
if "--port" in args and "--transport" not in args:
    args = ["--transport", "http", *args]
{extra}sys.exit(serve_main(args))
'''
WORKSPACE = 'os.makedirs("notes", exist_ok=True)\nargs = ["--workspace", "notes", *args]\n'


def _clone_root(cwd: Path) -> Path:
    """A directory like a clone's root (the README runs its commands there), with the stand-ins."""
    cwd.mkdir(parents=True, exist_ok=True)
    for name in ("tests", "load"):
        (cwd / name).symlink_to(ROOT / name, target_is_directory=True)
    (cwd / "my_server.py").write_text(STAND_IN_SERVER.format(extra=""))
    shutil.copy(ROOT / "tests" / "clients" / "ref_client.py", cwd / "my_client.py")
    for build, extra in (("new", WORKSPACE), ("old", "")):
        server = cwd / build / "server"
        server.parent.mkdir()
        server.write_text(f"#!{sys.executable}\n" + STAND_IN_SERVER.format(extra=extra))
        server.chmod(0o755)
    python = cwd / "old" / "bin" / "python"
    python.parent.mkdir()
    python.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    python.chmod(0o755)
    return cwd


@dataclass
class Outcome:
    """What one command did."""

    command: str
    rc: int
    out: str
    err: str
    cwd: Path

    def shown(self) -> str:
        return (f"{self.command}\n(exit {self.rc}, in {self.cwd})\n--- stdout ---\n{self.out[-3000:]}\n"
                f"--- stderr ---\n{self.err[-3000:]}")


def _shell(cmd: str, cwd: Path, *, stdin: str | None = None, timeout: float = 240) -> Outcome:
    """`cmd` in bash, its whole process group killed if it outlives `timeout`."""
    proc = subprocess.Popen(["bash", "-c", cmd], cwd=cwd, env=_env(), text=True, start_new_session=True,
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"still running after {timeout} s: {Outcome(cmd, -9, out, err, cwd).shown()}")
    return Outcome(cmd, proc.returncode, out, err, cwd)


def _kill_group(proc: subprocess.Popen[str], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


_BASE: list[Path] = []


@pytest.fixture(scope="module", autouse=True)
def _runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Where commands whose outcome several tests share run (`_once`)."""
    _BASE.append(tmp_path_factory.mktemp("readme-once"))
    yield
    _BASE.clear()
    _DONE.clear()


_DONE: dict[str, Outcome] = {}


def _once(cmd: str, timeout: float = 240) -> Outcome:
    """A command run once per module in a clone root of its own: a command and the replay of what it
    wrote share one run (the same seed gives the same campaign anyway)."""
    if cmd not in _DONE:
        _DONE[cmd] = _shell(cmd, _clone_root(Path(tempfile.mkdtemp(dir=_BASE[0]))), timeout=timeout)
    return _DONE[cmd]


def _copy_in(src_root: Path, path: Path, cwd: Path) -> str:
    """`path` (under `src_root`) copied to the same relative place under `cwd`; that relative path."""
    rel = path.relative_to(src_root)
    (cwd / rel).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, cwd / rel)
    return str(rel)


def _repro(done: Outcome, pattern: str) -> Path:
    """The finding's own repro file (not one of its per-probe files) of a run that found it."""
    assert done.rc == 1, done.shown()
    found = sorted(p for p in (done.cwd / "tempest-out").glob("*/repro/*.json") if re.fullmatch(pattern, p.name))
    assert found, f"no repro file {pattern} under {done.cwd}: {done.shown()}"
    return found[0]


def _mutant_repro(cwd: Path, stack: contextlib.ExitStack) -> dict[str, str]:
    done = _once(MUTANT)
    return {"mutant_repro": _copy_in(done.cwd, _repro(done, r"RPC-01-[0-9a-f]+\.json"), cwd)}


def _client_repro(cwd: Path, stack: contextlib.ExitStack) -> dict[str, str]:
    done = _once(CLIENT_BUG)
    return {"client_repro": _copy_in(done.cwd, _repro(done, r"MRTR-10-[0-9a-f]+\.json"), cwd)}


def _v1_json(cwd: Path, stack: contextlib.ExitStack) -> dict[str, str]:
    done = _once(SAVE_V1)
    assert done.rc == 0, done.shown()
    _copy_in(done.cwd, done.cwd / "v1.json", cwd)
    return {}


def _previous_load(cwd: Path, stack: contextlib.ExitStack) -> dict[str, str]:
    """previous/summary.json: the summary of a short load run (the default run's `load --run-time 1s`)."""
    done = _once(SHORT_LOAD)
    assert done.rc == 0, done.shown()
    (cwd / "previous").mkdir()
    shutil.copy(next((done.cwd / "tempest-out").glob("load-*/summary.json")), cwd / "previous" / "summary.json")
    return {}


def _reference_http(cwd: Path, stack: contextlib.ExitStack) -> dict[str, str]:
    """A reference server on a free loopback port, for a command that needs one already running."""
    port = str(_free_port())
    _start(f"mcp-tempest serve --transport http --port {port}", cwd, "reference-http", int(port), stack)
    return {"server_port": port}


PREPARE: dict[str, Callable[[Path, contextlib.ExitStack], dict[str, str]]] = {
    "mutant-repro": _mutant_repro, "client-repro": _client_repro, "v1.json": _v1_json,
    "previous-load": _previous_load, "reference-http": _reference_http,
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[str], log: Path, deadline_s: float = 30) -> None:
    """Until a server accepts connections on 127.0.0.1:`port`; fails if it exits first."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            pytest.fail(f"exited {proc.returncode} before it listened on {port}: {log.read_text()[-2000:]}")
        with socket.socket() as s, contextlib.suppress(OSError):
            s.settimeout(0.5)
            s.connect(("127.0.0.1", port))
            return
        time.sleep(0.1)
    pytest.fail(f"nothing listening on {port} after {deadline_s} s: {log.read_text()[-2000:]}")


@dataclass
class Started:
    """A command running in the background, its output in files."""

    command: str
    proc: subprocess.Popen[str]
    log: Path

    def outcome(self, cwd: Path) -> Outcome:
        return Outcome(self.command, self.proc.returncode, self.log.with_suffix(".out").read_text(),
                       self.log.read_text(), cwd)


def _start(cmd: str, cwd: Path, name: str, port: int | None, stack: contextlib.ExitStack) -> Started:
    """`cmd` started in its own process group, stopped (SIGTERM, then SIGKILL) when `stack` closes."""
    log = cwd / f"{name}.err"
    with open(log.with_suffix(".out"), "w") as out, open(log, "w") as err:
        proc = subprocess.Popen(["bash", "-c", cmd], cwd=cwd, env=_env(), text=True, start_new_session=True,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    stack.callback(_stop, proc)
    if port is not None:
        _wait_port(port, proc, log)
    return Started(cmd, proc, log)


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        _kill_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            _kill_group(proc, signal.SIGKILL)
            proc.wait(timeout=15)


def _check(run: Run, done: Outcome, extra: str = "") -> None:
    """Exit status, no traceback, the key output, and the files it promised."""
    expected = run.rc if isinstance(run.rc, tuple) else (run.rc,)
    assert done.rc in expected, f"exit {done.rc}, expected {expected}: {done.shown()}"
    assert "Traceback (most recent call last)" not in done.err, done.shown()
    assert re.search(run.expect, f"{done.out}\n{done.err}\n{extra}", flags=re.M), \
        f"{run.expect!r} not in the output of {done.shown()}\n{extra}"
    for pattern, regex in run.files:
        paths = sorted(done.cwd.glob(pattern))
        assert paths, f"{pattern} not written by {done.shown()}"
        if regex:
            text = paths[-1].read_text(encoding="utf-8", errors="replace")
            assert re.search(regex, text, flags=re.M), f"{regex!r} not in {paths[-1]}"


def _skip_if_missing(requires: str) -> None:
    if requires.startswith("python:"):
        module = requires.removeprefix("python:")
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"needs the Python package {module!r} (bash .ci/install-servers.sh installs it)")
    elif requires and shutil.which(requires) is None:
        pytest.skip(f"needs `{requires}` on PATH")


Unit = tuple[tuple[str, Run], ...]


def _units(nightly: bool) -> list[Unit]:
    """Each Run on its own, but a group's lines together (in README order)."""
    order = {cmd: i for i, cmd in enumerate(readme_commands())}
    units: list[Unit] = []
    groups: dict[str, list[tuple[str, Run]]] = {}
    for cmd, entries in COMMANDS.items():
        for entry in entries:
            if isinstance(entry, Run) and entry.nightly == nightly:
                if entry.group:
                    groups.setdefault(entry.group, []).append((cmd, entry))
                else:
                    units.append(((cmd, entry),))
    units += [tuple(sorted(members, key=lambda m: order.get(m[0], 0))) for members in groups.values()]
    return units


def _unit_id(unit: Unit) -> str:
    """The command as a shell-safe word (`-k load_--run-time_20s` selects it)."""
    cmd = TRAILING_COMMENT.sub("", unit[0][0]).removeprefix("mcp-tempest ")
    return unit[0][1].group or re.sub(r"[^\w.,%-]+", "_", cmd).strip("_")[:80]


def _run_unit(unit: Unit, cwd: Path) -> None:
    for _, run in unit:
        _skip_if_missing(run.requires)
    if len(unit) == 1 and unit[0][1].mode == "run" and not unit[0][1].needs and unit[0][1].stdin is None:
        readme, run = unit[0]
        _check(run, _once(run.command(readme, {}), run.timeout))  # shared with a test needing what it writes
        return
    _clone_root(cwd)
    ctx = {"port_a": str(_free_port()), "port_b": str(_free_port())}
    with contextlib.ExitStack() as stack:
        for _, run in unit:
            for need in run.needs:
                ctx.update(PREPARE[need](cwd, stack))
        background: list[tuple[Run, Started, str]] = []
        for i, (readme, run) in enumerate(unit):
            cmd = run.command(readme, ctx)
            if run.mode == "run":
                _check(run, _shell(cmd, cwd, stdin=run.stdin, timeout=run.timeout))
                continue
            port = int(run.ready.format(**ctx)) if run.ready else None
            started = _start(cmd, cwd, f"line{i}", port, stack)
            then = ""
            if run.then:
                probe = _shell(run.then.format(**ctx), cwd)
                assert probe.rc == 0, probe.shown()
                then = probe.out + probe.err
            background.append((run, started, then))
        end = time.monotonic()
        for run, started, _ in background:
            if run.mode == "job":
                try:
                    started.proc.wait(timeout=max(1.0, run.timeout - (time.monotonic() - end)))
                except subprocess.TimeoutExpired:
                    pytest.fail(f"still running after {run.timeout} s: {started.outcome(cwd).shown()}")
            else:
                assert started.proc.poll() is None, f"stopped by itself: {started.outcome(cwd).shown()}"
    for run, started, then in background:
        _check(run, started.outcome(cwd), then)


@pytest.mark.parametrize("unit", _units(nightly=False), ids=_unit_id)
def test_readme_command(unit: Unit, tmp_path: Path) -> None:
    """Each README command as the table says (as written, or shortened with the reason given)."""
    _run_unit(unit, tmp_path)


@pytest.mark.nightly
@pytest.mark.parametrize("unit", _units(nightly=True), ids=_unit_id)
def test_readme_command_at_full_length(unit: Unit, tmp_path: Path) -> None:
    """The commands the default run shortens, at the length the README gives them."""
    _run_unit(unit, tmp_path)


# --- the table covers the README, and says why


def uncovered(text: str = README) -> list[str]:
    return [cmd for cmd in readme_commands(text) if cmd not in COMMANDS]


def test_every_readme_command_is_covered() -> None:
    missing = uncovered()
    assert not missing, "\n".join(f"README command not covered: {cmd} (add it to COMMANDS in tests/test_readme.py)"
                                  for cmd in missing)


def test_a_command_added_to_the_readme_without_an_entry_is_caught() -> None:
    extra = "\n```console\n$ mcp-tempest fuzz \\\n    --brand-new-option\nfuzz: ...\n```\n```bash\nmcp-tempest probe --x\n```\n"
    assert uncovered(README + extra) == ["mcp-tempest fuzz --brand-new-option", "mcp-tempest probe --x"]


def test_the_check_fails_on_a_wrong_status_output_or_file() -> None:
    """The table's checks can fail: the README's `mcp-tempest probe` (shared with its own test)
    against a wrong exit status, a missing line and a file it never wrote."""
    done, right = _once("mcp-tempest probe"), COMMANDS["mcp-tempest probe"][0]
    assert isinstance(right, Run)
    _check(right, done)
    for wrong in (Run(1, r"^probe: "), Run(0, r"^probe: legacy"), Run(0, r"^probe: ", files=(("v1.json", ""),))):
        with pytest.raises(AssertionError):
            _check(wrong, done)


def test_no_entry_for_a_command_the_readme_no_longer_has() -> None:
    gone = [cmd for cmd in COMMANDS if cmd not in readme_commands()]
    assert not gone, f"entries for commands no longer in the README: {gone}"


def test_every_entry_runs_the_command_or_says_why_not() -> None:
    """A default-run test or a reason for each command; a reason for every run not as written."""
    for cmd, entries in COMMANDS.items():
        runs = [e for e in entries if isinstance(e, Run)]
        reasons = [e for e in entries if isinstance(e, Reason)]
        assert any(not r.nightly for r in runs) or reasons, f"neither run by default nor explained: {cmd}"
        for run in runs:
            assert run.as_written or run.why, f"shortened without a reason: {cmd}"
            assert run.mode in ("run", "server", "job"), cmd
            assert all(k in PREPARE for k in run.needs), cmd
        for reason in reasons:
            assert reason.why.endswith(".") and reason.why.count(". ") == 0, f"one sentence: {reason.why}"


# --- the rest of the manual


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    ci_lines = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines()
                if ln.strip() and not ln.startswith("#") and "pytest" in ln]
    assert len(ci_lines) == 1
    assert ci_lines[0].strip() in readme_commands()


def test_quick_start_has_exactly_two_commands() -> None:
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert len(re.findall(r"```sh\n", quick.split("To point it at", 1)[0])) == 2


def test_quick_start_comes_first_after_the_contents() -> None:
    """A stranger reads the quick start before anything else: only the contents and a short
    paragraph come before it, and the contents link every section there is."""
    head = README.split("\n## ", 1)[0]
    assert len(head.split("## Contents", 1)[0].split()) < 120, "more than a short paragraph before the contents"
    sections = re.findall(r"^## (.+)$", README, flags=re.M)
    assert sections[:2] == ["Contents", "Quick start"], sections[:3]
    contents = README.split("## Contents", 1)[1].split("\n## ", 1)[0]
    for title in re.findall(r"^#{2,3} (.+)$", README, flags=re.M):
        if title == "Contents":
            continue
        anchor = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        assert f"](#{anchor})" in contents, f"the contents do not link {title!r} (#{anchor})"


def test_readme_catalogue_table_is_the_reference_servers_measured_now() -> None:
    from mcp_tempest.fuzz.catalogue import Catalogue, read
    from mcp_tempest.targets.target_spec import default_target

    section = README.split("### `mcp-tempest catalogue`", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| (\S[^|]*?) \| (\**\d+\**) \| (\**\d+\**) \|$", section, flags=re.M)
    cat = Catalogue.from_probe(read(default_target(), timeout=10, max_pages=20, drift=False).first)
    measured = [(row[0], str(row[1]), str(row[2])) for row in
                (line.rsplit(None, 2) for line in cat.table()[1:len(cat.everything()) + 1])]
    assert [(name, t, b) for name, t, b in rows if not name.startswith("**")] == measured
    # The headline is what the model pays every turn; resources, templates and prompts are their own row.
    assert ("**every turn (tools as one list + instructions)**", f"**{cat.turn_tokens}**",
            f"**{cat.turn_bytes}**") in rows
    assert ("**resources, templates, prompts (not every turn)**", f"**{cat.on_demand_tokens}**",
            f"**{cat.on_demand_bytes}**") in rows
    tools = cat.costs["tools"]
    assert (f"Seven tool definitions cost {cat.tools_list_cost.tokens} tokens as one list ({cat.tokens('tools')} "
            f"summed per tool; cheapest `{tools[-1].name}` {tools[-1].tokens}, costliest `{tools[0].name}`"
            ) in " ".join(section.split())
    assert len(tools) == 7


def test_quick_start_mutant_run_shows_a_finding_as_written() -> None:
    """The quick start's second run is a newcomer's first finding: the command exactly as the README
    has it exits 1 with the RPC-01 finding the text promises (the clean run above it finds nothing)."""
    quick = README.split("## Quick start", 1)[1].split("To point it at", 1)[0]
    first = re.findall(r"```sh\n(.*?)```", quick, flags=re.S)[0].splitlines()
    assert len(first) == 2 and first[1] == MUTANT
    done = _once(MUTANT)  # from a clone root, the venv's `mcp-tempest` first on PATH, as a newcomer has it
    assert done.rc == 1, done.shown()
    promised = "finding RPC-01-...: MUST RPC-01 JSON that is not a valid request was served (a result)"
    assert promised in " ".join(quick.split())
    assert re.search(r"^  finding RPC-01-\w+: MUST RPC-01 JSON that is not a valid request was served \(a result\) ",
                     done.out, flags=re.M), done.shown()
    # The counts, not the verdict's wording after them (fuzz/verdict_line.py owns that).
    assert re.match(r"fuzz: \d+ examples, 1 propert(y|ies), 1 findings?\b", done.out.splitlines()[-1]), done.shown()
    assert "Traceback" not in done.err

"""The hostile corpus (tests/hostile/): tiny stdio servers, each wrong in one way a real server
has been, and the verdict each must get from a real campaign. The base they bend is itself a
correct server and must draw nothing, so every verdict here is the bug's, not the corpus's.
tests/hostile/http_front.py serves the same modules over Streamable HTTP, where a wedged
worker is a POST that never gets a byte back."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from fuzz_support import PYTHON, last_line, property_row, run_cli

HOSTILE = Path(__file__).resolve().parent / "hostile"


def _campaign(tmp_path: Path, server: str, *args: str, timeout: float = 240.0,
              target: str | None = None) -> tuple[int, list[dict[str, Any]], float]:
    out = tmp_path / server
    target = target or "stdio:" + shlex.join([PYTHON, str(HOSTILE / f"{server}.py")])
    started = time.monotonic()
    proc = run_cli("fuzz", "--target", target, "--seed", "1", "--out", str(out), *args, timeout=timeout)
    elapsed = time.monotonic() - started
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    findings = orjson.loads((out / "findings.json").read_bytes())["findings"]
    assert last_line(proc.stdout).startswith("fuzz: "), proc.stdout
    return proc.returncode, findings, elapsed


def _kinds(findings: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(f["rule"], f["strength"], f["title"]) for f in findings}


def test_the_correct_base_draws_no_finding(tmp_path: Path) -> None:
    code, findings, _ = _campaign(tmp_path, "_base", "--properties", "valid,framing,ids", "--max-examples", "60")
    assert (code, findings) == (0, [])


@pytest.mark.slow  # ~50 s: the era probe and the first example each wait out deadlines
def test_answers_once_then_hangs_is_reported_once_in_bounded_time(tmp_path: Path) -> None:
    code, findings, elapsed = _campaign(tmp_path, "once_then_hang", "--properties", "valid",
                                        "--max-examples", "50", "--timeout", "2")
    assert code == 1
    assert _kinds(findings) == {("RPC-01", "SHOULD", "target stopped answering")}, findings
    assert len(findings) == 1
    # 50 examples of timeouts would take minutes; the campaign stops the property at the first.
    assert elapsed < 120, elapsed
    # A request that was never answered replays as still failing, never as "no longer fails".
    replayed = run_cli("replay", str(tmp_path / "once_then_hang" / findings[0]["repro"]), timeout=120)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "still fails" in last_line(replayed.stdout), replayed.stdout


def _over_http(server: str) -> str:
    return "http+spawn:" + shlex.join([PYTHON, str(HOSTILE / "http_front.py"), "{port}", server])


@contextmanager
def _http_server(server: str, env: dict[str, str]) -> Iterator[str]:
    """A hostile module served over HTTP on a free loopback port that the test owns (not respawned)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([PYTHON, str(HOSTILE / "http_front.py"), str(port), server],
                            env={**os.environ, **env}, cwd=HOSTILE)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait()


def test_the_correct_base_draws_no_finding_over_http(tmp_path: Path) -> None:
    code, findings, _ = _campaign(tmp_path, "_base", "--max-examples", "60", target=_over_http("_base"))
    assert (code, findings) == (0, [])


@pytest.mark.slow  # ~30 s: one deadline for the example, one for the liveness check
def test_answers_then_hangs_over_http_is_reported_once(tmp_path: Path) -> None:
    # Three answers carry the era probe and the campaign's discovery; the first example then hangs.
    with _http_server("once_then_hang", {"HOSTILE_ANSWERS": "3"}) as url:
        code, findings, elapsed = _campaign(tmp_path, "once_then_hang", "--properties", "valid",
                                            "--max-examples", "50", "--timeout", "2", target=url)
    assert code == 1
    assert _kinds(findings) == {("RPC-01", "SHOULD", "target stopped answering")}, findings
    assert elapsed < 120, elapsed


def test_a_spawned_http_server_that_never_answers_twice_is_unusable_not_a_pass(tmp_path: Path) -> None:
    """Every fresh instance spends its one answer on the readiness check: nothing can be judged."""
    proc = run_cli("fuzz", "--target", _over_http("once_then_hang"), "--properties", "valid", "--timeout", "2",
                   "--seed", "1", "--out", str(tmp_path / "out"), timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "unusable target" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.slow  # ~30 s: shrinking a finding seen on every method
def test_answers_with_another_id_over_http_is_a_mismatched_id(tmp_path: Path) -> None:
    code, findings, _ = _campaign(tmp_path, "other_id", "--properties", "valid", "--max-examples", "5",
                                  "--timeout", "2", target=_over_http("other_id"))
    assert code == 1
    # Over HTTP the response belongs to its POST, so the wrong id is known to be this request's.
    assert {(f["rule"], f["strength"]) for f in findings} == {("RPC-07", "MUST")}, findings


#: phocinae-mcp 0.2.6's three deviations (issue 32): served although no revision accepts them.
ALL_ERA_PROBES = ("--properties", "framing", "--mutations", "meta-log-level-invalid,params-non-object,meta-not-object",
                  "--max-examples", "30")


def test_a_dual_era_server_serving_frames_malformed_in_every_era_is_judged(tmp_path: Path) -> None:
    """dual_era.py serves `params: []` and `_meta: "x"` the 2025 way and ignores a modern request's
    logLevel "warn", as phocinae-mcp 0.2.6 does; the probe finds it dual-era, which no longer hides
    a frame invalid in both eras, nor a later modern request of the same process."""
    code, findings, _ = _campaign(tmp_path, "dual_era", *ALL_ERA_PROBES)
    assert code == 1
    found = {(f["rule"], f["strength"], f["mutation"]) for f in findings}
    assert found == {("META-04", "SHOULD", "params-non-object"), ("META-04", "SHOULD", "meta-not-object"),
                     ("LOG-03", "SHOULD", "meta-log-level-invalid")}, findings


def test_a_correct_dual_era_server_draws_nothing_from_frames_malformed_in_every_era(tmp_path: Path) -> None:
    target = "stdio:" + shlex.join([PYTHON, str(HOSTILE / "dual_era.py"), "--strict"])
    code, findings, _ = _campaign(tmp_path, "dual_era", *ALL_ERA_PROBES, target=target)
    assert (code, findings) == (0, [])
    out = tmp_path / "dual_era"
    assert orjson.loads((out / "findings.json").read_bytes())["examples"] >= 20  # the probes were played


def test_drops_idless_errors_is_rpc_01_silence_toward_malformed_frames(tmp_path: Path) -> None:
    code, findings, _ = _campaign(tmp_path, "drops_idless", "--properties", "framing", "--max-examples", "40")
    assert code == 1
    assert findings, "silence toward malformed frames went unseen"
    # The server's duty (JSON-RPC 2.0's error response, via RPC-01), never the rule the probe broke.
    assert {f["rule"] for f in findings} == {"RPC-01"}, findings
    assert all(f["title"].endswith("got no reply") for f in findings), findings
    assert all(f["mutation"] for f in findings), findings


@pytest.mark.slow  # every cross-wired answer costs a deadline
def test_answers_with_another_id_is_rpc_06(tmp_path: Path) -> None:
    code, findings, _ = _campaign(tmp_path, "other_id", "--properties", "valid", "--max-examples", "3",
                                  "--timeout", "1")
    assert code == 1
    assert ("RPC-06", "MUST", "response id matches no request sent to this process") in _kinds(findings), findings


def test_closes_mid_frame_is_an_unanswered_request(tmp_path: Path) -> None:
    code, findings, _ = _campaign(tmp_path, "closes_mid_frame", "--properties", "valid", "--max-examples", "5")
    assert code == 1
    assert ("RPC-01", "MUST", "the process exited before answering") in _kinds(findings), findings


@pytest.mark.slow
def test_slow_server_is_clean_within_its_deadline(tmp_path: Path) -> None:
    code, findings, _ = _campaign(tmp_path, "slow", "--properties", "valid", "--max-examples", "2",
                                  "--timeout", "5")
    assert (code, findings) == (0, [])


@pytest.mark.slow
def test_slow_server_past_the_deadline_is_unanswered(tmp_path: Path) -> None:
    code, findings, _ = _campaign(tmp_path, "slow", "--properties", "valid", "--max-examples", "3",
                                  "--timeout", "1")
    assert code == 1
    assert {f["rule"] for f in findings} == {"RPC-01"}, findings


def _slow_start(tmp_path: Path, timeout: str, env: dict[str, str], examples: str = "12"
                ) -> tuple[int, list[dict[str, Any]], str, int]:
    """slow_start under framing: every malformed probe waits 1 s before its sentinel, shorter than
    the first answer takes, so only the campaign's clock (--timeout plus start-up) keeps it alive."""
    out = tmp_path / f"slow_start-{timeout}"
    target = "stdio:" + shlex.join([PYTHON, str(HOSTILE / "slow_start.py")])
    proc = run_cli("fuzz", "--target", target, "--properties", "framing", "--max-examples", examples,
                   "--seed", "1", "--timeout", timeout, "--out", str(out), timeout=240, env=env)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    doc = orjson.loads((out / "findings.json").read_bytes())
    return proc.returncode, doc["findings"], proc.stdout, doc["examples"]


def test_a_slow_first_answer_inside_the_timeout_is_no_finding_and_runs_every_example(tmp_path: Path) -> None:
    # Before liveness ran on the campaign's clock this was SHOULD RPC-01 "target stopped answering"
    # after 2 s (the probe's 1 s, then a 1 s stall probe) under --timeout 20, and framing stopped.
    code, findings, out, examples = _slow_start(tmp_path, "20", {"HOSTILE_START_DELAY": "2.5"})
    assert (code, findings, examples) == (0, [], 12), out
    assert "stopped" not in out and "slow target" not in out, out


def test_a_slow_first_answer_past_the_timeout_is_reported_slow_with_its_figure(tmp_path: Path) -> None:
    # --timeout 1 is below the 2.5 s start, but a fresh process's first answer also gets the
    # start-up allowance: slow, said with the figure in the property's note, not dead.
    code, findings, out, examples = _slow_start(tmp_path, "1", {"HOSTILE_START_DELAY": "2.5"})
    assert (code, findings, examples) == (0, [], 12), out
    note = property_row(out, "framing")
    assert "slow target:" in note and "(--timeout 1 s" in note and "stopped" not in note, note
    figure = float(note.split(" was answered ")[1].split(" s ")[0])
    assert 2.4 <= figure < 6.0, note


@pytest.mark.slow  # ~30 s: the start-up allowance, then the stall probe's deadline
def test_answers_slower_than_the_timeout_on_a_warm_process_stopped_answering(tmp_path: Path) -> None:
    # Past --timeout on a process that has answered before: no answer within the user's clock
    # twice (the request, then a server/discover) is the README's "target stopped answering".
    code, findings, out, _ = _slow_start(tmp_path, "0.5", {"HOSTILE_START_DELAY": "0", "HOSTILE_FRAME_DELAY": "1.5"})
    assert code == 1, out
    assert _kinds(findings) == {("RPC-01", "SHOULD", "target stopped answering")}, findings
    assert "stopped: the target stopped answering" in out, out


def test_drivers_record_the_send_a_timeout_waited_for(tmp_path: Path) -> None:
    """Timeouts are structured: `ref` is the send awaited, on stdio and over HTTP alike."""
    import socket
    import threading

    from mcp_tempest.targets import wire
    from mcp_tempest.targets.http_driver import HttpConnection
    from mcp_tempest.targets.stdio_driver import start_stdio
    from mcp_tempest.targets.transcript import Transcript

    conn = start_stdio(Transcript("hang", "stdio"), [PYTHON, str(HOSTILE / "once_then_hang.py")], timeout=5.0)
    try:
        assert conn.request(wire.build_request(1, "server/discover"), timeout=5.0) is not None
        assert conn.request(wire.build_request(2, "server/discover"), timeout=0.5) is None
        events = conn.transcript.events
        sends = [i for i, e in enumerate(events) if e.kind == "send"]
        timeouts = [e for e in events if e.kind == "timeout"]
        assert [e.ref for e in timeouts] == [sends[1]]
    finally:
        conn.close()

    # An HTTP endpoint that accepts and never answers.
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    thread = threading.Thread(target=lambda: accepted.append(server.accept()[0]), daemon=True)
    thread.start()
    http = HttpConnection(Transcript("hang", "http"), [f"http://127.0.0.1:{server.getsockname()[1]}/mcp"],
                          timeout=0.5)
    try:
        index = http.send(wire.build_request(3, "server/discover"))
        timeouts = [e for e in http.transcript.events if e.kind == "timeout"]
        assert timeouts and {e.ref for e in timeouts} == {index}
    finally:
        http.close()
        for sock in accepted:
            sock.close()
        server.close()

"""Client mode end to end: real client processes against the harness's scripted server.

The reference client must come out clean over a seed sweep; each of its one-bug variants must be
found by a short fixed-seed campaign under its labelled rule, shrunk, filed and replayable.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from mcp_tempest.fuzz.client.campaign import ClientCampaign, run_client_campaign
from mcp_tempest.fuzz.client.case import ClientCase, Play
from mcp_tempest.fuzz.client.runner import ClientCommand, run_case
from mcp_tempest.fuzz.findings import FindingStore
from mcp_tempest.fuzz.oracle.client_rules import judge_client

ROOT = Path(__file__).resolve().parent.parent
REF = ROOT / "tests" / "clients" / "ref_client.py"
TEMPEST = [sys.executable, "-m", "mcp_tempest.fuzz.cli"]

# mutant -> (the rule it breaks, campaign seed, examples)
MUTANTS = {
    "reuse-id": ("RPC-05", 7, 33),
    "drop-request-state": ("MRTR-10", 7, 33),
    "retry-same-id": ("MRTR-09", 7, 33),
    "missing-resulttype-error": ("RT-05", 7, 33),
    "send-response": ("STDIO-04", 7, 33),
    "forget-meta-on-retry": ("META-04", 7, 33),
}


def ref(bug: str | None = None, placeholder: str = "{server}") -> str:
    return f"{sys.executable} {REF}" + (f" --bug {bug}" if bug else "") + f" {placeholder}"


def campaign(command: str, tmp_path: Path, *, seed: int, examples: int, shrink: float = 4.0) -> FindingStore:
    cmd = ClientCommand.parse(command)
    store = FindingStore(tmp_path, target=cmd.template, seed=seed)
    run_client_campaign(ClientCampaign(cmd, seed=seed, max_examples=examples, shrink_seconds=shrink), store)
    return store


def test_the_mutant_list_is_what_the_reference_client_offers() -> None:
    out = subprocess.run([sys.executable, str(REF), "--list-bugs"], capture_output=True, text=True, check=True)
    assert [line.split("\t")[0] for line in out.stdout.splitlines()] == list(MUTANTS)


def test_a_hostile_case_is_survived_and_read_right_by_the_reference_client() -> None:
    ir = {"resultType": "input_required", "inputRequests": {"a": {"method": "roots/list"}}, "requestState": ""}
    case = ClientCase(plays={
        "tools/call": [Play("result", result=ir, before=["stdout-noise", "frame-split", "response-null-id",
                                                          "response-unknown-id", "server-request"], duplicate=True)],
        # Held until the client's next frame (10 s at most): the reuse-id mutant's second request
        # must be seen while this one is in flight; fixed 0.2 s and 1 s holds were too short under load.
    "resources/list": [Play("result", result={"resources": []}, probe="result-missing-resulttype", hold=10.0)],
        "prompts/get": [Play("error", code=-32022, message="x", data={"supported": ["2026-07-28"]})],
        "resources/read": [Play("result", result={"resultType": "partial", "contents": []},
                                probe="result-unknown-resulttype")],
    })
    transcript = run_case(ClientCommand.parse(ref()), case)
    assert judge_client(transcript) == []
    readings = {e.message["step"]: e.message["outcome"] for e in transcript.events if e.kind == "reading"}
    assert readings == {"server/discover": "complete", "tools/list": "complete", "tools/call": "complete",
                        "resources/list": "complete", "prompts/list": "complete", "resources/read": "invalid",
                        "prompts/get": "complete"}
    # the pipelined pair was answered out of order, and the retry echoed the empty state
    sent = [e.message for e in transcript.events if e.kind == "recv"]
    retry = [m for m in sent if m.get("method") == "tools/call"][1]
    assert retry["params"]["requestState"] == "" and retry["params"]["inputResponses"] == {"a": {"roots": []}}


# 23 of a case's 27 examples are the coverage phase, the same at every seed: three seeds in the
# default run, the other seven nightly (`-m nightly`), where the sweep's length belongs.
@pytest.mark.parametrize("seed", [*range(3), *(pytest.param(s, marks=pytest.mark.nightly) for s in range(3, 10))])
def test_the_reference_client_gets_no_findings(seed: int, tmp_path: Path) -> None:
    # 23 coverage cases (the same at every seed), then the seed's own draws
    store = campaign(ref(), tmp_path, seed=seed, examples=27)
    assert store.examples == 27
    assert [(f.rule, f.title) for f in store.findings] == []


@pytest.mark.slow  # about 10 s each on an idle machine; the default run covers one mutant in the command test
@pytest.mark.parametrize("bug", list(MUTANTS))
def test_each_mutant_is_found_with_its_rule_and_replays(bug: str, tmp_path: Path) -> None:
    rule, seed, examples = MUTANTS[bug]
    store = campaign(ref(bug), tmp_path, seed=seed, examples=examples)
    found = [f for f in store.findings if f.rule == rule]
    assert found, [(f.rule, f.title) for f in store.findings]
    repro = tmp_path / found[0].repro
    doc = orjson.loads(repro.read_bytes())
    # a coverage-phase case carries no Hypothesis blob: the case itself is what replays
    assert doc["case"]["mode"] == "client" and doc["rule"] == rule
    still = subprocess.run([*TEMPEST, "replay", str(repro)], capture_output=True, text=True, cwd=ROOT)
    assert still.returncode == 1, still.stdout + still.stderr
    assert f"still fails: MUST {rule}" in still.stdout
    fixed = subprocess.run([*TEMPEST, "replay", str(repro), "--client", ref()], capture_output=True, text=True)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr


def test_the_command_writes_findings_repro_junit_and_html(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = subprocess.run([*TEMPEST, "fuzz-client", "--client", ref("retry-same-id"), "--max-examples", "33",
                          "--seed", "7", "--shrink-time", "3", "--out", str(out), "--fail-on", "must"],
                         capture_output=True, text=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1].startswith("fuzz-client: ")
    index = orjson.loads((out / "findings.json").read_bytes())
    assert index["seed"] == 7 and any(f["rule"] == "MRTR-09" for f in index["findings"])
    for f in index["findings"]:
        assert (out / f["repro"]).is_file()
    junit = (out / "junit.xml").read_text()
    assert "<failure" in junit and "MRTR-09" in junit
    assert "MRTR-09" in (out / "report.html").read_text()
    repro = out / next(f["repro"] for f in index["findings"] if f["rule"] == "MRTR-09")
    still = subprocess.run([*TEMPEST, "replay", str(repro)], capture_output=True, text=True)
    assert still.returncode == 1 and "still fails: MUST MRTR-09" in still.stdout, still.stdout + still.stderr
    fixed = subprocess.run([*TEMPEST, "replay", str(repro), "--client", ref()], capture_output=True, text=True)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr


@pytest.mark.parametrize("argv", [
    ["fuzz-client", "--client", "python client.py"],  # no placeholder
    ["fuzz-client", "--client", "python client.py {server} {url}"],
    ["fuzz-client", "--client", "'unbalanced {server}"],
    ["fuzz-client"],
    ["fuzz-client", "--client", "x {server}", "--max-examples", "0"],
    ["fuzz-client", "--client", "x {server}", "--fail-on", "never"],
])
def test_bad_command_lines_exit_2_with_one_line(argv: list[str]) -> None:
    run = subprocess.run([*TEMPEST, *argv], capture_output=True, text=True)
    assert run.returncode == 2
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("client", ["/nonexistent/client {server}", f"{sys.executable} -c pass {{server}}",
                                    f"{sys.executable} -c pass {{url}}"])
def test_a_client_that_cannot_start_or_never_connects_exits_2(client: str, tmp_path: Path) -> None:
    run = subprocess.run([*TEMPEST, "fuzz-client", "--client", client, "--max-examples", "2", "--out",
                          str(tmp_path)], capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_replaying_a_client_repro_against_a_client_that_cannot_run_exits_2(tmp_path: Path) -> None:
    doc = {"id": "x", "rule": "MRTR-10", "target": "/nonexistent/client {server}",
           "case": ClientCase().to_json(), "transcript": {"target": "t", "transport": "stdio", "events": []}}
    path = tmp_path / "r.json"
    path.write_bytes(orjson.dumps(doc))
    run = subprocess.run([*TEMPEST, "replay", str(path)], capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    quiet = subprocess.run([*TEMPEST, "replay", str(path), "--client", f"{sys.executable} -c pass {{server}}"],
                           capture_output=True, text=True)
    assert quiet.returncode == 2, quiet.stdout + quiet.stderr


# --- Streamable HTTP ({url}) ---

_HTTP_CASE = ClientCase(plays={
    "tools/list": [Play("result", result={"resultType": "complete", "tools": [
        {"name": "héllo", "inputSchema": {"type": "object"}}]})],  # Mcp-Name must go base64 (HDR-06)
    "tools/call": [Play("result", sse=True, result={
        "resultType": "input_required", "inputRequests": {"a": {"method": "roots/list"}}, "requestState": "zz"})],
    # The pair the client sends together (each on its own thread and connection, in either order)
    # is held until both are in flight (10 s at most), so the reuse-id mutant's shared id is seen
    # twice in flight; fixed 0.2 s and 1 s holds on one of them were too short under load.
    "resources/list": [Play("result", result={"resources": []}, probe="result-missing-resulttype", hold=10.0)],
    "prompts/list": [Play("result", result={"resultType": "complete", "prompts": []}, hold=10.0)],
    "prompts/get": [Play("error", code=-32022, message="x", data={"supported": ["2026-07-28"]})],
})


@pytest.mark.parametrize(("bug", "rules"), [
    (None, []), ("reuse-id", ["RPC-05"]), ("send-response", ["HTTP-04"]), ("drop-request-state", ["MRTR-10"]),
])
def test_over_http_the_reference_client_is_clean_and_its_mutants_are_caught(bug: str | None,
                                                                           rules: list[str]) -> None:
    transcript = run_case(ClientCommand.parse(ref(bug, "{url}")), _HTTP_CASE)
    assert transcript.transport == "http"
    assert [v.rule for v in judge_client(transcript)] == rules
    statuses = [e.status for e in transcript.events if e.kind == "send"]
    assert 400 in statuses and 200 in statuses  # -32022 travels with HTTP 400, as DIGEST has it


@pytest.mark.parametrize("seed", range(3))
def test_over_http_the_reference_client_gets_no_findings(seed: int, tmp_path: Path) -> None:
    store = campaign(ref(None, "{url}"), tmp_path, seed=seed, examples=2)
    assert store.examples == 2 and [(f.rule, f.title) for f in store.findings] == []


def _readme_fuzz_client_commands() -> list[str]:
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", readme, flags=re.S)
    return [ln.strip() for b in blocks for ln in b.splitlines() if ln.strip().startswith("mcp-tempest fuzz-client")]


@pytest.mark.slow
@pytest.mark.parametrize(("index", "status"), [(0, 0), (1, 1)])
def test_the_readme_fuzz_client_commands_work_as_written(index: int, status: int) -> None:
    import shlex
    import shutil

    command = _readme_fuzz_client_commands()[index]
    argv = shlex.split(command)
    exe = Path(sys.executable).with_name("mcp-tempest")
    env = {**__import__("os").environ, "PATH": f"{Path(sys.executable).parent}:{__import__('os').environ['PATH']}"}
    done = subprocess.run([str(exe), *argv[1:]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    out = next((ln.split("output in ", 1)[1] for ln in done.stdout.splitlines() if "output in " in ln), None)
    try:
        assert done.returncode == status, done.stdout[-2000:] + done.stderr[-2000:]
    finally:
        if out:
            shutil.rmtree(ROOT / out, ignore_errors=True)

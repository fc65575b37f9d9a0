"""Authorization under `--auth`: the harness's authorization server, the reference server as a
resource server, the AUTH rules in both directions, and the auth mutants found by campaigns.

Everything runs for real: the authorization server is a loopback HTTP server minting tokens with
joserfc, the reference server fetches its JWKS, campaigns are the `mcp-tempest` command."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from mcp_tempest.fuzz.oracle.registry import RULES, judge, judge_response
from mcp_tempest.strategies.auth_tokens import AUTH_DIRECTIVE, TOKEN_CASES, TokenCase
from mcp_tempest.targets import auth_client, wire
from mcp_tempest.targets.auth_server import AuthServer
from mcp_tempest.targets.http_driver import HttpConnection
from mcp_tempest.targets.transcript import Transcript
from mcp_tempest.targets.transports import transport_named
from tests.fuzz_support import last_line, reference_http, run_cli

DISCOVER = wire.build_request(1, "server/discover", {})


@pytest.fixture(scope="module")
def issuer() -> Iterator[AuthServer]:
    with AuthServer() as server:
        auth_client.use_issuer(server.issuer)
        yield server
        auth_client.Session(None, server.issuer).close()


def _serve(issuer: AuthServer, db: Path, *bugs: str) -> tuple[subprocess.Popen[str], str]:
    args = [sys.executable, "-m", "mcp_tempest.targets.reference", "--transport", "http", "--port", "0", "--db", str(db),
            "--auth-issuer", issuer.issuer]
    for bug in bugs:
        args += ["--bug", bug]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert "listening on" in line, line
    return proc, line.split()[-1]


def _send(url: str, case: str, msg: dict | None = None) -> tuple[int, str | None, bytes]:
    msg = msg or DISCOVER
    applied = auth_client.apply_auth(wire.http_headers(msg) | {AUTH_DIRECTIVE: case}, url)
    headers, query = applied.wire, applied.sent_query
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.request("POST", parts.path + (f"?{query}" if query else ""), body=orjson.dumps(msg), headers=headers)
    resp = conn.getresponse()
    return resp.status, resp.getheader("WWW-Authenticate"), resp.read()


def test_authorization_server_publishes_metadata_and_jwks_on_loopback(issuer: AuthServer) -> None:
    assert issuer.issuer.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(issuer.issuer + "/.well-known/oauth-authorization-server") as resp:
        meta = json.loads(resp.read())
    assert meta["issuer"] == issuer.issuer
    with urllib.request.urlopen(meta["jwks_uri"]) as resp:
        keys = json.loads(resp.read())["keys"]
    assert len(keys) == 1 and "d" not in keys[0]  # the public half only
    with pytest.raises(auth_client.AuthServerError):
        AuthServer(host="0.0.0.0")


def test_reference_server_gives_every_token_case_its_reaction(issuer: AuthServer, tmp_path: Path) -> None:
    proc, url = _serve(issuer, tmp_path / "db.sqlite")
    try:
        for name, case in TOKEN_CASES.items():
            status, challenge, body = _send(url, name)
            if case.served:
                assert status == 200 and b'"result"' in body, (name, status, body)
                continue
            assert status in case.statuses, (name, status)
            assert challenge is not None and challenge.startswith("Bearer ") and "resource_metadata=" in challenge
            if status == 403:
                assert 'error="insufficient_scope"' in challenge
        parts = urllib.parse.urlsplit(url)
        with urllib.request.urlopen(f"http://{parts.netloc}/.well-known/oauth-protected-resource/mcp") as resp:
            prm = json.loads(resp.read())
        assert prm["resource"] == url and prm["authorization_servers"] == [issuer.issuer]
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize(("bug", "case", "rule"), [
    ("auth-audience-unchecked", "wrong-audience", "AUTH-03"),
    ("auth-expiry-unchecked", "expired", "AUTH-04"),
    ("auth-signature-unchecked", "alg-none", "AUTH-07"),
    ("auth-signature-unchecked", "unknown-kid", "AUTH-07"),
    ("auth-no-www-authenticate", "none", "AUTH-11"),
])
def test_each_auth_rule_fires_on_its_mutant_and_not_on_the_reference(
        issuer: AuthServer, tmp_path: Path, bug: str, case: str, rule: str) -> None:
    """The oracle in both directions on real answers: the same request judged by the pair rules."""
    verdicts = {}
    for which in ("reference", bug):
        proc, url = _serve(issuer, tmp_path / f"{which}.sqlite", *([] if which == "reference" else [bug]))
        try:
            status, challenge, body = _send(url, case)
        finally:
            proc.terminate()
            proc.wait(10)
        response = orjson.loads(body) if body.startswith(b'{"jsonrpc"') else None
        found = judge_response(DISCOVER, response, http_status=status,
                               headers={"WWW-Authenticate": challenge} if challenge else {},
                               request_headers={AUTH_DIRECTIVE: case},
                               rules=[r for r in RULES if r.startswith("AUTH-")])
        verdicts[which] = {v.rule for v in found}
    assert verdicts["reference"] == set()
    assert rule in verdicts[bug]


def test_auth_rules_stay_silent_without_auth() -> None:
    """No directive recorded: a 401 without a challenge is not judged by AUTH rules (no --auth)."""
    found = judge_response(DISCOVER, None, http_status=401, headers={}, request_headers={"Accept": "*/*"},
                           rules=[r for r in RULES if r.startswith("AUTH-")])
    assert found == []


def test_a_valid_token_refused_is_auth_01_and_an_origin_403_is_not() -> None:
    refused = judge_response(DISCOVER, None, http_status=401, headers={"WWW-Authenticate": "Bearer"},
                             request_headers={AUTH_DIRECTIVE: "valid"}, rules=["AUTH-01"])
    assert [v.rule for v in refused] == ["AUTH-01"]
    origin = judge_response(DISCOVER, None, http_status=403, headers={},
                            request_headers={AUTH_DIRECTIVE: "valid"}, rules=["AUTH-01"])
    assert origin == []


# --- campaigns: `fuzz --auth` finds each auth mutant, with a reproduction that replays ---


def _campaign(tmp_path: Path, *bugs: str, properties: str = "auth", examples: int = 30,
              seed: int = 3) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path / "out"
    target = reference_http(tmp_path / "db.sqlite", *bugs).replace(" --db", " --auth-issuer {issuer} --db", 1)
    result = run_cli("fuzz", "--target", target, "--auth", "--properties", properties, "--max-examples",
                     str(examples), "--seed", str(seed), "--out", str(out), "--no-database")
    return result, out


AUTH_MUTANT_RULES: dict[str, str] = {
    "auth-audience-unchecked": "AUTH-03",
    "auth-expiry-unchecked": "AUTH-04",
    "auth-signature-unchecked": "AUTH-07",
    "auth-no-www-authenticate": "AUTH-11",
}


@pytest.mark.parametrize(("bug", "rule"), list(AUTH_MUTANT_RULES.items()))
def test_a_short_auth_campaign_finds_the_mutant_and_its_repro_replays(tmp_path: Path, bug: str, rule: str) -> None:
    result, out = _campaign(tmp_path, bug)
    assert result.returncode == 1, result.stderr
    assert "authorization server: http://127.0.0.1:" in result.stderr
    findings = json.loads((out / "findings.json").read_text())["findings"]
    mine = [f for f in findings if f["rule"] == rule]
    assert mine, [f["rule"] for f in findings]
    assert {f["rule"] for f in findings} == {rule}  # one bug, one rule: nothing else is blamed
    repro = out / mine[0]["repro"]
    replay = run_cli("replay", str(repro), timeout=120)  # starts its own authorization server
    assert replay.returncode == 1 and "still fails" in last_line(replay.stdout), replay.stdout + replay.stderr
    fixed = reference_http(tmp_path / "db2.sqlite").replace(" --db", " --auth-issuer {issuer} --db", 1)
    clean = run_cli("replay", str(repro), "--target", fixed, timeout=120)
    assert clean.returncode == 0 and "no longer fails" in last_line(clean.stdout), clean.stdout + clean.stderr


def test_the_reference_under_auth_has_no_finding_in_any_property(tmp_path: Path) -> None:
    """Every property runs against the protected server with valid tokens: zero findings."""
    result, out = _campaign(tmp_path, properties="all", examples=80, seed=7)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert last_line(result.stdout).endswith(" 0 findings: PASS"), last_line(result.stdout)


def test_issuer_placeholder_without_auth_is_a_one_line_error(tmp_path: Path) -> None:
    target = reference_http(tmp_path / "db.sqlite").replace(" --db", " --auth-issuer {issuer} --db", 1)
    result = run_cli("fuzz", "--target", target, "--max-examples", "1", "--out", str(tmp_path / "o"))
    assert result.returncode == 2 and "add --auth" in result.stderr and "Traceback" not in result.stderr
    bad = run_cli("fuzz", "--target", target, "--auth", "--auth-issuer", "http://10.0.0.1:9", "--max-examples", "1")
    assert bad.returncode == 2 and "loopback" in bad.stderr and "Traceback" not in bad.stderr


def test_load_with_auth_sends_valid_tokens_to_a_protected_server(tmp_path: Path) -> None:
    target = reference_http(tmp_path / "db.sqlite").replace(" --db", " --auth-issuer {issuer} --db", 1)
    out = tmp_path / "load"
    result = run_cli("load", "--target", target, "--auth", "--run-time", "3s", "--users", "2", "--out", str(out),
                     "--fail-on", "failures>0", timeout=180)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert (out / "summary.json").is_file()
    line = last_line(result.stdout)
    assert line.startswith("load: ") and " 0 failures" in line and line.endswith(" 0 violations: PASS"), line
    bad = run_cli("load", "--target", target, "--run-time", "3s", "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and "add --auth" in bad.stderr and "Traceback" not in bad.stderr


SDK_SERVER = Path(__file__).parent / "servers" / "sdk_server.py"


@pytest.mark.slow
def test_the_python_sdk_as_a_resource_server_passes_and_unprotected_fails(tmp_path: Path) -> None:
    """A real SDK server (mcp 2.3.0's AuthSettings + a joserfc TokenVerifier): every token case
    gets its reaction, the metadata is right (no finding); the same server without auth serves
    every credential, and each case's rule says so."""
    base = f"http+spawn:{sys.executable} {SDK_SERVER} --transport http --port {{port}} --state-key {'k' * 32}"
    found: dict[str, set[str]] = {}
    for name, target in (("protected", base + " --auth-issuer {issuer}"), ("open", base)):
        out = tmp_path / name
        result = run_cli("fuzz", "--target", target, "--auth", "--properties", "auth", "--max-examples", "20",
                         "--seed", "5", "--out", str(out), "--no-database", timeout=240)
        assert result.returncode in (0, 1), result.stderr
        found[name] = {f["rule"] for f in json.loads((out / "findings.json").read_text())["findings"]}
    assert found["protected"] == set()
    assert found["open"] >= {"AUTH-02", "AUTH-03", "AUTH-04", "AUTH-05", "AUTH-06", "AUTH-07", "AUTH-08",
                             "AUTH-09", "AUTH-10", "AUTH-14"}


def test_a_running_server_and_a_running_auth_server_are_fuzzed_with_auth_issuer(tmp_path: Path) -> None:
    """`mcp-tempest auth-server` for a server started by hand; fuzz and probe adopt it."""
    issuer_proc = subprocess.Popen([sys.executable, "-m", "mcp_tempest.fuzz.cli", "auth-server"], stdout=subprocess.PIPE,
                                   text=True)
    server = None
    try:
        assert issuer_proc.stdout is not None
        issuer_url = issuer_proc.stdout.readline().split()[2]
        assert issuer_url.startswith("http://127.0.0.1:")
        server = subprocess.Popen([sys.executable, "-m", "mcp_tempest.targets.reference", "--transport", "http", "--port", "0",
                                   "--db", str(tmp_path / "db.sqlite"), "--auth-issuer", issuer_url,
                                   "--bug", "auth-audience-unchecked"], stderr=subprocess.PIPE, text=True)
        assert server.stderr is not None
        url = server.stderr.readline().split()[-1]
        probe = run_cli("probe", "--target", url, "--auth", "--auth-issuer", issuer_url, timeout=60)
        assert probe.returncode == 0 and "era:" in probe.stdout, probe.stderr
        unauthorized = run_cli("probe", "--target", url, timeout=60)
        assert unauthorized.returncode == 2, unauthorized.stdout
        out = tmp_path / "out"
        result = run_cli("fuzz", "--target", url, "--auth", "--auth-issuer", issuer_url, "--properties", "auth",
                         "--max-examples", "20", "--seed", "2", "--out", str(out), "--no-database")
        assert result.returncode == 1, result.stdout + result.stderr
        assert {f["rule"] for f in json.loads((out / "findings.json").read_text())["findings"]} == {"AUTH-03"}
    finally:
        for proc in (server, issuer_proc):
            if proc is not None:
                proc.terminate()
                proc.wait(10)


_CHALLENGE = 'Bearer error="invalid_token", resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource"'
_SERVED = {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}}


@pytest.mark.parametrize("case", [c for c in TOKEN_CASES.values() if not c.served], ids=lambda c: c.name)
def test_each_token_case_rule_fires_when_served_and_not_when_refused(case: TokenCase) -> None:
    """Crafted both ways: a refused credential that was served breaks the case's rule; the refusal
    the rule asks for (with its challenge) draws no AUTH rule at all."""
    served = judge_response(DISCOVER, _SERVED, http_status=200, headers={},
                            request_headers={AUTH_DIRECTIVE: case.name}, rules=[case.rule])
    assert [v.rule for v in served] == [case.rule]
    status = min(case.statuses)
    challenge = _CHALLENGE.replace("invalid_token", "insufficient_scope") if status == 403 else _CHALLENGE
    refused = judge_response(DISCOVER, None, http_status=status, headers={"WWW-Authenticate": challenge},
                             request_headers={AUTH_DIRECTIVE: case.name},
                             rules=[r for r in RULES if r.startswith("AUTH-")])
    assert refused == [], [(v.rule, v.title) for v in refused]


@pytest.mark.parametrize(("case", "status", "rule", "lacking", "full"), [
    ("expired", 401, "AUTH-12", 'Bearer error="invalid_token"', _CHALLENGE),
    ("none", 401, "AUTH-12", "Bearer", 'Bearer resource_metadata="http://127.0.0.1:9/.well-known/x"'),
    ("insufficient-scope", 403, "AUTH-13", _CHALLENGE, _CHALLENGE.replace("invalid_token", "insufficient_scope")),
    ("missing-scope", 403, "AUTH-13", 'Bearer scope="mcp"', 'Bearer error="insufficient_scope", scope="mcp"'),
])
def test_a_challenge_without_its_parameter_breaks_auth_12_or_13_and_a_full_one_does_not(
        case: str, status: int, rule: str, lacking: str, full: str) -> None:
    """Crafted both ways: the refusal is right (status and a challenge), only the parameter the rule
    asks of the challenge is missing; the same refusal with it draws no AUTH rule."""
    every = [r for r in RULES if r.startswith("AUTH-")]
    broken = judge_response(DISCOVER, None, http_status=status, headers={"WWW-Authenticate": lacking},
                            request_headers={AUTH_DIRECTIVE: case}, rules=every)
    assert [v.rule for v in broken] == [rule], [(v.rule, v.title) for v in broken]
    kept = judge_response(DISCOVER, None, http_status=status, headers={"WWW-Authenticate": full},
                          request_headers={AUTH_DIRECTIVE: case}, rules=every)
    assert kept == [], [(v.rule, v.title) for v in kept]


def test_metadata_naming_another_authorization_server_breaks_auth_15(issuer: AuthServer, tmp_path: Path) -> None:
    """On real exchanges: the reference configured with another (real, running) authorization server
    publishes that one, which the harness's fetch of the metadata judges as AUTH-15; configured with
    the harness's own issuer, the same fetch draws no AUTH rule."""
    verdicts: dict[str, list[tuple[str, str]]] = {}
    with AuthServer() as other:
        for label, configured in (("own", issuer), ("other", other)):
            proc, url = _serve(configured, tmp_path / f"{label}.sqlite")
            try:
                transcript = Transcript(url, transport_named("http"))
                conn = HttpConnection(transcript, [url], timeout=10)
                for where in ("metadata-path", "metadata-root"):
                    conn.send(b"", headers=auth_client.directive(where), http_method="GET")
                found = judge(transcript, rules=[r for r in RULES if r.startswith("AUTH-")])
                verdicts[label] = [(v.rule, v.detail) for v in found]
            finally:
                proc.terminate()
                proc.wait(10)
    assert verdicts["own"] == []
    assert [rule for rule, _ in verdicts["other"]] == ["AUTH-15", "AUTH-15"]
    assert all(other.issuer in detail for _, detail in verdicts["other"])

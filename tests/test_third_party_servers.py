"""Smoke tests for the third-party servers under tests/servers/ and for the conformance runner.

Why: the "real servers" campaigns and the conformance comparison are only as good as these
fixtures. Each test starts the real process and asserts on the bytes that come back: every
modern server answers `server/discover` on stdio and HTTP and runs one MRTR round trip; the
legacy server answers `initialize` and refuses `server/discover`; the Python SDK's sealed
requestState crosses processes only with a shared key; the conformance wrapper reports a pass
and a fail correctly.

Needs `bash .ci/install-servers.sh` (npm packages, Node >= 22): skipped without it, failed under CI=true.
"""

from __future__ import annotations

import http.client
import os
import select
import signal
import socket
import subprocess
import time
from collections.abc import Iterator

import orjson
import pytest
from conformance import run_conformance, run_scenario
from servers.catalog import EVERYTHING, FASTMCP, MODERN, SDK, STATE_KEY_ENV, ServerSpec, node_binary, npm_packages_installed

MODERN_VERSION = "2026-07-28"
SHARED_KEY = "gauntlet-test-shared-request-state-key-0123456789"


def _require_npm_side() -> None:
    if node_binary() is None or not npm_packages_installed():
        reason = "third-party npm servers not installed: run bash .ci/install-servers.sh"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def _spec_param(spec: ServerSpec):  # noqa: ANN202 - pytest param object
    return pytest.param(spec, id=spec.name)


def _request(id_: int | str, method: str, params: dict | None = None, caps: dict | None = None) -> dict:
    body = dict(params or {})
    body["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": caps or {},
        "io.modelcontextprotocol/clientInfo": {"name": "gauntlet-smoke", "version": "0"},
    }
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": body}


class StdioServer:
    """A server process on pipes: one JSON line out, lines back with a deadline, group reaped on close."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
        self._buf = b""

    def send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps(message) + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 20.0) -> dict:
        """The next response line (notifications are skipped); fails at the deadline."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                message = orjson.loads(line)
                if "id" in message:
                    return message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pytest.fail(f"no response within {timeout} s")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    pytest.fail(f"server closed stdout (exit {self.proc.poll()})")
                self._buf += chunk

    def call(self, message: dict, timeout: float = 20.0) -> dict:
        self.send(message)
        return self.receive(timeout)

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(3)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
        if self.proc.stdout:
            self.proc.stdout.close()


def _state_env(key: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop(STATE_KEY_ENV, None)
    if key:
        env[STATE_KEY_ENV] = key
    return env


def _assert_discover(response: dict, id_: int | str) -> None:
    assert response["id"] == id_, response
    result = response["result"]
    assert result["resultType"] == "complete"
    assert MODERN_VERSION in result["supportedVersions"]
    assert isinstance(result["ttlMs"], int) and result["cacheScope"] in ("public", "private")
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"].startswith("gauntlet-")


def _retry_params(first: dict) -> dict:
    (key,) = first["inputRequests"].keys()
    params = {
        "name": "create_event",
        "arguments": {"title": "Standup"},
        "inputResponses": {key: {"action": "accept", "content": {"startsAt": "2026-08-03T09:00"}}},
    }
    if "requestState" in first:
        params["requestState"] = first["requestState"]
    return params


@pytest.mark.parametrize("spec", [_spec_param(s) for s in MODERN])
def test_modern_server_over_stdio_discovers_and_completes_mrtr(spec: ServerSpec) -> None:
    if spec.runtime == "node":
        _require_npm_side()
    server = StdioServer(spec.stdio_argv())
    try:
        _assert_discover(server.call(_request(1, "server/discover")), 1)
        tools = server.call(_request(2, "tools/list"))["result"]["tools"]
        assert {"create_event", "echo"} <= {t["name"] for t in tools}
        caps = {"elicitation": {}}
        first = server.call(_request(3, "tools/call", {"name": "create_event", "arguments": {"title": "Standup"}}, caps))
        assert first["result"]["resultType"] == "input_required"
        (ask,) = first["result"]["inputRequests"].values()
        assert ask["method"] == "elicitation/create"
        done = server.call(_request(4, "tools/call", _retry_params(first["result"]), caps))
        assert done["result"]["resultType"] == "complete"
        assert "2026-08-03T09:00" in done["result"]["content"][0]["text"]
        week = server.call(_request(5, "resources/read", {"uri": "calendar://week"}))["result"]
        assert week["contents"][0]["uri"] == "calendar://week"
        prompt = server.call(_request(6, "prompts/get", {"name": "prepare_week", "arguments": {"focus": "x"}}))
        assert prompt["result"]["messages"][0]["role"] == "user"
    finally:
        server.close()


def test_legacy_server_answers_initialize_and_refuses_discover() -> None:
    _require_npm_side()
    server = StdioServer(EVERYTHING.stdio_argv())
    try:
        refused = server.call(_request(1, "server/discover"))
        assert "error" in refused and "result" not in refused
        init = server.call(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
            }
        )
        assert init["result"]["protocolVersion"] == "2025-11-25"
        assert "serverInfo" in init["result"]
    finally:
        server.close()


@pytest.mark.parametrize(("key", "accepted"), [(None, False), (SHARED_KEY, True)], ids=["per-process-key", "shared-key"])
@pytest.mark.parametrize("spec", [_spec_param(SDK), _spec_param(FASTMCP)])
def test_request_state_crosses_processes_only_with_a_shared_key(spec: ServerSpec, key: str | None, accepted: bool) -> None:
    a = StdioServer(spec.stdio_argv(), env=_state_env(key))
    b = StdioServer(spec.stdio_argv(), env=_state_env(key))
    try:
        caps = {"elicitation": {}}
        first = a.call(_request(1, "tools/call", {"name": "create_event", "arguments": {"title": "Standup"}}, caps))
        retry = b.call(_request(2, "tools/call", _retry_params(first["result"]), caps))
        if accepted:
            assert retry["result"]["resultType"] == "complete"
        else:
            assert retry["error"]["code"] == -32602
            assert retry["error"]["message"] == "Invalid or expired requestState"
    finally:
        a.close()
        b.close()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(port: int, path: str, message: dict, headers: dict[str, str], timeout: float = 5.0) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, body=orjson.dumps(message), headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def _modern_headers(method: str) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN_VERSION,
        "Mcp-Method": method,
    }


def _json_or_sse(body: bytes) -> dict:
    """The JSON-RPC message of a JSON body or of the last `data:` line of an SSE body."""
    text = body.strip()
    if text.startswith(b"{"):
        return orjson.loads(text)
    data = [line[5:].strip() for line in body.splitlines() if line.startswith(b"data:") and line[5:].strip()]
    assert data, body[:300]
    return orjson.loads(data[-1])


class HttpServer:
    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self.port = _free_port()
        self.proc = subprocess.Popen(
            spec.http_argv(self.port),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=spec.http_env(self.port),
        )

    def wait_listening(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"{self.spec.name} exited with {self.proc.returncode} before listening")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        pytest.fail(f"{self.spec.name} not listening on {self.port} within {timeout} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)


@pytest.fixture(scope="module")
def http_servers() -> Iterator[dict[str, HttpServer]]:
    """Every HTTP server started at once (start-up overlaps), stopped at the end of the module."""
    specs = [s for s in (*MODERN, EVERYTHING) if s.runtime == "python" or (node_binary() and npm_packages_installed())]
    servers = {s.name: HttpServer(s) for s in specs}
    try:
        for server in servers.values():
            server.wait_listening()
        yield servers
    finally:
        for server in servers.values():
            server.stop()


@pytest.mark.parametrize("spec", [_spec_param(s) for s in MODERN])
def test_modern_server_over_http_answers_discover(spec: ServerSpec, http_servers: dict[str, HttpServer]) -> None:
    if spec.runtime == "node":
        _require_npm_side()
    server = http_servers[spec.name]
    status, body = _post(server.port, spec.http_path, _request(7, "server/discover"), _modern_headers("server/discover"))
    assert status == 200, body[:300]
    _assert_discover(_json_or_sse(body), 7)
    status, body = _post(server.port, spec.http_path, _request(8, "bogus/method"), _modern_headers("bogus/method"))
    assert status == 404 and _json_or_sse(body)["error"]["code"] == -32601


def test_legacy_server_over_http_answers_initialize_only(http_servers: dict[str, HttpServer]) -> None:
    _require_npm_side()
    server = http_servers[EVERYTHING.name]
    status, body = _post(server.port, "/mcp", _request(1, "server/discover"), _modern_headers("server/discover"))
    assert status == 400 and b"-32000" in body
    init = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    status, body = _post(server.port, "/mcp", init, headers)
    assert status == 200
    assert _json_or_sse(body)["result"]["protocolVersion"] == "2025-11-25"


def test_conformance_runner_reports_pass_and_fail(http_servers: dict[str, HttpServer]) -> None:
    _require_npm_side()
    url = SDK.http_url(http_servers[SDK.name].port)
    results = run_conformance(url, ["sep-2164-resource-not-found", "server-stateless"], timeout=60.0)
    passed, output = results["sep-2164-resource-not-found"]
    assert passed, output
    assert "sep-2164-error-code" not in output.split("\n\n", 1)[0]  # nothing listed as failed or warned
    # The SDK fixture has no `test_missing_capability` diagnostic tool, so this check must fail.
    passed, output = results["server-stateless"]
    assert not passed
    assert "FAILURE sep-2575-server-rejects-undeclared-capability" in output


def test_conformance_runner_fails_cleanly_on_unknown_scenario(http_servers: dict[str, HttpServer]) -> None:
    _require_npm_side()
    run = run_scenario(SDK.http_url(http_servers[SDK.name].port), "no-such-scenario", timeout=30.0)
    assert not run.passed and run.checks == ()
    assert "Unknown scenario" in run.output


def test_conformance_runner_refuses_remote_urls() -> None:
    with pytest.raises(ValueError, match="loopback"):
        run_conformance("http://example.com/mcp", ["caching"], timeout=5.0)

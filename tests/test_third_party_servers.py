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

import pytest
from conformance import run_conformance, run_scenario
from servers.catalog import (
    EVERYTHING,
    FASTMCP,
    MODERN,
    SDK,
    STATE_KEY_ENV,
    ServerSpec,
    node_binary,
    npm_packages_installed,
)

from mcp_tempest.targets import wire

pytestmark = pytest.mark.slow  # starts real third-party servers (the marker's stated purpose)

MODERN_VERSION = wire.MODERN_VERSION
SHARED_KEY = "tempest-test-shared-request-state-key-0123456789"


def _require_npm_side() -> None:
    if node_binary() is None or not npm_packages_installed():
        reason = "third-party npm servers not installed: run bash .ci/install-servers.sh"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def _spec_param(spec: ServerSpec) -> object:
    return pytest.param(spec, id=spec.name)


def _request(id_: int | str, method: str, params: dict | None = None, caps: dict | None = None) -> dict:
    return wire.build_request(id_, method, params, capabilities=caps or {})


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
        self.proc.stdin.write(wire.encode_line(message))
        self.proc.stdin.flush()

    def receive(self, timeout: float = 20.0) -> dict:
        """The next response line (notifications are skipped); fails at the deadline."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                message = wire.parse_line(line)
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
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"].startswith("tempest-")


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
        first = server.call(
            _request(3, "tools/call", {"name": "create_event", "arguments": {"title": "Standup"}}, caps)
        )
        assert first["result"]["resultType"] == "input_required"
        (ask,) = first["result"]["inputRequests"].values()
        assert ask["method"] == "elicitation/create"
        done = server.call(_request(4, "tools/call", _retry_params(first["result"]), caps))
        assert done["result"]["resultType"] == "complete"
        assert "2026-08-03T09:00" in done["result"]["content"][0]["text"]
        week = server.call(_request(5, "resources/read", {"uri": "calendar://week"}))["result"]
        assert week["contents"][0]["uri"] == "calendar://week"
        prompt = server.call(
            _request(6, "prompts/get", {"name": "prepare_week", "arguments": {"focus": "x"}})
        )
        assert prompt["result"]["messages"][0]["role"] == "user"
    finally:
        server.close()


def test_legacy_server_answers_initialize_and_refuses_discover() -> None:
    _require_npm_side()
    server = StdioServer(EVERYTHING.stdio_argv())
    try:
        refused = server.call(_request(1, "server/discover"))
        assert "error" in refused and "result" not in refused
        init = server.call(wire.legacy_initialize(2))
        assert init["result"]["protocolVersion"] == wire.LEGACY_VERSION
        assert "serverInfo" in init["result"]
    finally:
        server.close()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(port: int, path: str, message: dict) -> tuple[int, dict]:
    """POST one message with the headers a conformant client derives from it; (status, the reply)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10.0)
    try:
        conn.request("POST", path, body=wire.dumps(message), headers=wire.http_headers(message))
        response = conn.getresponse()
        body = response.read()
        messages = wire.response_messages(response.getheader("Content-Type"), body)
    finally:
        conn.close()
    replies = [m for m in messages if isinstance(m, dict) and "id" in m]
    assert replies, (response.status, body[:300])
    return response.status, replies[-1]


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
    specs = [
        s
        for s in (*MODERN, EVERYTHING)
        if s.runtime == "python" or (node_binary() and npm_packages_installed())
    ]
    servers = {s.name: HttpServer(s) for s in specs}
    try:
        for server in servers.values():
            server.wait_listening()
        yield servers
    finally:
        for server in servers.values():
            server.stop()


@pytest.mark.parametrize("spec", [_spec_param(s) for s in MODERN])
def test_modern_server_over_http_answers_discover(
    spec: ServerSpec, http_servers: dict[str, HttpServer]
) -> None:
    if spec.runtime == "node":
        _require_npm_side()
    port = http_servers[spec.name].port
    status, reply = _post(port, spec.http_path, _request(7, "server/discover"))
    assert status == 200, reply
    _assert_discover(reply, 7)
    status, reply = _post(port, spec.http_path, _request(8, "bogus/method"))
    assert (status, reply["error"]["code"]) == (404, wire.METHOD_NOT_FOUND)


def test_legacy_server_over_http_answers_initialize_only(http_servers: dict[str, HttpServer]) -> None:
    _require_npm_side()
    port = http_servers[EVERYTHING.name].port
    status, reply = _post(port, "/mcp", _request(1, "server/discover"))
    assert (status, reply["error"]["code"]) == (400, -32000)  # "Server not initialized", id null
    status, reply = _post(port, "/mcp", wire.legacy_initialize(2))
    assert status == 200
    assert reply["result"]["protocolVersion"] == wire.LEGACY_VERSION


def test_conformance_runner_reports_pass_and_fail(http_servers: dict[str, HttpServer]) -> None:
    _require_npm_side()
    sdk_url = SDK.http_url(http_servers[SDK.name].port)
    results = run_conformance(sdk_url, ["sep-2164-resource-not-found"], timeout=60.0)
    passed, output = results["sep-2164-resource-not-found"]
    assert passed, output
    assert output.startswith("sep-2164-resource-not-found: PASS (exit 0, 4 checks: 4 ok")
    # fastmcp 4.2.3 by default serves a request whose Host and Origin are evil.example.com (HTTP-12).
    fastmcp_url = FASTMCP.http_url(http_servers[FASTMCP.name].port)
    passed, output = run_conformance(fastmcp_url, ["dns-rebinding-protection"], timeout=60.0)[
        "dns-rebinding-protection"
    ]
    assert not passed
    assert "FAILURE localhost-host-rebinding-rejected" in output


def test_conformance_runner_fails_cleanly_on_unknown_scenario(http_servers: dict[str, HttpServer]) -> None:
    _require_npm_side()
    run = run_scenario(SDK.http_url(http_servers[SDK.name].port), "no-such-scenario", timeout=30.0)
    assert not run.passed and run.checks == ()
    assert "Unknown scenario" in run.output


def test_conformance_runner_refuses_remote_urls() -> None:
    with pytest.raises(ValueError, match="loopback"):
        run_conformance("http://example.com/mcp", ["caching"], timeout=5.0)


def test_sdk_request_state_crosses_processes_only_with_a_shared_key(
    http_servers: dict[str, HttpServer],
) -> None:
    # A and B (stdio) share a key; the HTTP instance keeps the SDK default, a key drawn at start-up.
    a, b = (StdioServer(SDK.stdio_argv(), env=_state_env(SHARED_KEY)) for _ in range(2))
    try:
        caps = {"elicitation": {}}
        first = a.call(
            _request(1, "tools/call", {"name": "create_event", "arguments": {"title": "Standup"}}, caps)
        )
        retry = _retry_params(first["result"])
        assert b.call(_request(2, "tools/call", retry, caps))["result"]["resultType"] == "complete"
    finally:
        a.close()
        b.close()
    status, refused = _post(
        http_servers[SDK.name].port, SDK.http_path, _request(3, "tools/call", retry, caps)
    )
    assert refused["error"]["code"] == wire.INVALID_PARAMS, (status, refused)
    assert refused["error"]["message"] == "Invalid or expired requestState"

"""Test helpers for the reference server: real processes, real pipes and sockets, schema checks.

Every message a helper client receives is validated against the official schema on arrival
(results dispatched on `resultType` first, DIGEST RT-06), and recorded in `SEEN`, so any test
that talks to the server also proves its results are schema-valid; `test_reference_schema.py`
adds a tour that reaches every method and result kind.
"""

from __future__ import annotations

import http.client
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from mcp_tempest.targets import wire

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SCHEMA_PATH = PROJECT_ROOT.parent / "shared" / "spec" / "2026-07-28" / "schema.json"
SERVE = [sys.executable, "-m", "mcp_tempest.targets.reference"]

RESULT_DEFS: dict[str, str] = {
    "server/discover": "DiscoverResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "completion/complete": "CompleteResult",
    "subscriptions/listen": "SubscriptionsListenResult",
}

# (def name validated against, method or notification name) for every message checked.
SEEN: list[tuple[str, str]] = []

_validators: dict[str, Draft202012Validator] = {}
_registry: Registry | None = None


def schema_available() -> bool:
    return SCHEMA_PATH.is_file()


def validator(def_name: str) -> Draft202012Validator:
    global _registry
    if def_name not in _validators:
        if _registry is None:
            contents = json.loads(SCHEMA_PATH.read_text())
            _registry = Registry().with_resource("urn:mcp-schema", Resource.from_contents(contents))
        _validators[def_name] = Draft202012Validator({"$ref": f"urn:mcp-schema#/$defs/{def_name}"},
                                                     registry=_registry)
    return _validators[def_name]


def check_message(msg: Any, method: str | None) -> None:
    """Validate one server message; `method` is the request it answers (None for notifications)."""
    if not schema_available():
        return
    if isinstance(msg, dict) and "method" in msg:
        def_name, label = "ServerNotification", msg["method"]
    elif isinstance(msg, dict) and "error" in msg:
        def_name, label = "JSONRPCErrorResponse", str(msg["error"].get("code"))
    else:
        result = msg.get("result") if isinstance(msg, dict) else None
        if isinstance(result, dict) and result.get("resultType") == "input_required":
            def_name = "InputRequiredResult"
            assert "inputRequests" in result or "requestState" in result, "MRTR-02"
        else:
            def_name = RESULT_DEFS[method or ""]
        label = method or "?"
        errors = sorted(validator(def_name).iter_errors(result), key=str)
        assert not errors, f"{def_name} invalid: {errors[0].message} in {msg}"
        validator("JSONRPCResultResponse").validate(msg)
        SEEN.append((def_name, label))
        return
    errors = sorted(validator(def_name).iter_errors(msg), key=str)
    assert not errors, f"{def_name} invalid: {errors[0].message} in {msg}"
    SEEN.append((def_name, label))


def req(rid: Any, method: str, params: Mapping[str, Any] | None = None, *,
        caps: Mapping[str, Any] | None = None, log_level: str | None = None) -> dict[str, Any]:
    return wire.build_request(rid, method, params, capabilities=caps, log_level=log_level)


# --- stdio ---


class StdioServer:
    """One `serve --transport stdio` process; reads with deadlines, reaps on close.

    `validate=False` (for mutants, which are wrong on purpose) skips the schema check.
    """

    def __init__(self, db: Path, *bugs: str, extra: tuple[str, ...] = (), validate: bool = True) -> None:
        self.validate = validate
        argv = [*SERVE, "--db", str(db), *extra]
        for bug in bugs:
            argv += ["--bug", bug]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=PROJECT_ROOT, start_new_session=True)
        assert self.proc.stdin and self.proc.stdout
        self._sel = selectors.DefaultSelector()
        self._sel.register(self.proc.stdout, selectors.EVENT_READ)
        self._buf = b""
        self.methods: dict[Any, str] = {}

    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are; requests among them are remembered to validate their answers."""
        for line in data.splitlines():
            try:
                msg = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(msg, dict) and "id" in msg and isinstance(msg.get("method"), str):
                self.methods[(type(msg["id"]), msg["id"])] = msg["method"]
        assert self.proc.stdin
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, msg: Any) -> None:
        self.send_raw(wire.encode_line(msg))

    def read_line(self, timeout: float = 5.0) -> bytes | None:
        """The next stdout line (without newline), or None on EOF; raises TimeoutError."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no line from the server")
            if not self._sel.select(left):
                continue
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)  # type: ignore[union-attr]
            if not chunk:
                return None
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def recv(self, timeout: float = 5.0) -> Any:
        line = self.read_line(timeout)
        if line is None:
            return None
        msg = orjson.loads(line)
        if self.validate:
            method = None
            if isinstance(msg, dict) and "id" in msg and "method" not in msg:
                method = self.methods.get((type(msg["id"]), msg["id"]))
            check_message(msg, method)
        return msg

    def quiet(self, seconds: float = 0.3) -> bool:
        """True when nothing arrives on stdout for `seconds`."""
        try:
            self.read_line(seconds)
        except TimeoutError:
            return True
        return False

    def call(self, msg: dict[str, Any], timeout: float = 5.0) -> tuple[Any, list[Any]]:
        """Send a request; return (its response, notifications that came first)."""
        self.send(msg)
        notes = []
        while True:
            got = self.recv(timeout)
            assert got is not None, "server closed stdout"
            if "method" in got:
                notes.append(got)
                continue
            if got.get("id") == msg["id"]:
                return got, notes
            raise AssertionError(f"unexpected message {got}")

    def close(self, timeout: float = 5.0) -> int:
        """Close stdin (STDIO-10) and wait; returns the exit status."""
        try:
            if self.proc.stdin and not self.proc.stdin.closed:
                self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            return self.proc.wait(timeout)
        finally:
            self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(5)
        self._sel.close()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()

    def __enter__(self) -> StdioServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


# --- HTTP ---


class HttpResponse:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        ctype = headers.get("content-type", "")
        json_like = ctype.startswith(("application/json", "text/event-stream"))
        self.messages = wire.response_messages(ctype, body) if json_like else []

    @property
    def message(self) -> Any:
        return self.messages[-1] if self.messages else None


class HttpServer:
    """One `serve --transport http --port 0` process; its URL comes from the stderr line."""

    def __init__(self, db: Path, *bugs: str, extra: tuple[str, ...] = (), validate: bool = True) -> None:
        self.validate = validate
        argv = [*SERVE, "--transport", "http", "--port", "0", "--db", str(db), *extra]
        for bug in bugs:
            argv += ["--bug", bug]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=PROJECT_ROOT, start_new_session=True)
        line = self._first_stderr_line(10.0)
        assert line.startswith("listening on http://"), line
        self.url = line.removeprefix("listening on ").strip()
        hostport = self.url.split("//", 1)[1].split("/", 1)[0]
        self.host, port = hostport.rsplit(":", 1)
        self.port = int(port)
        self._conn: http.client.HTTPConnection | None = None

    def _first_stderr_line(self, timeout: float) -> str:
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stderr, selectors.EVENT_READ)  # type: ignore[arg-type]
        data = b""
        deadline = time.monotonic() + timeout
        try:
            while b"\n" not in data and time.monotonic() < deadline:
                if sel.select(max(0.0, deadline - time.monotonic())):
                    chunk = os.read(self.proc.stderr.fileno(), 4096)  # type: ignore[union-attr]
                    if not chunk:
                        break
                    data += chunk
        finally:
            sel.close()
        return data.decode(errors="replace").split("\n", 1)[0]

    def connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            self._conn = http.client.HTTPConnection(self.host, self.port, timeout=5)
        return self._conn

    def post(self, msg: Any = None, *, raw: bytes | None = None, headers: Mapping[str, str] | None = None,
             input_schema: Mapping[str, Any] | None = None, method: str = "POST", path: str = "/mcp",
             validate: bool | None = None, fresh: bool = False) -> HttpResponse:
        """POST (by default) one message with the headers a conformant client sends, plus overrides."""
        body = raw if raw is not None else (b"" if msg is None else orjson.dumps(msg))
        sent = wire.http_headers(msg, input_schema=input_schema) if msg is not None else {}
        if headers:
            lowered = {k.lower() for k in headers}
            sent = {k: v for k, v in sent.items() if k.lower() not in lowered}
            sent.update({k: v for k, v in headers.items() if v is not None})
        conn = http.client.HTTPConnection(self.host, self.port, timeout=5) if fresh else self.connection()
        try:
            conn.request(method, path, body=body, headers=sent)
            resp = conn.getresponse()
            data = resp.read()
        except (ConnectionError, http.client.HTTPException):
            if fresh:
                raise
            self._conn = None
            return self.post(msg, raw=raw, headers=headers, input_schema=input_schema, method=method,
                             path=path, validate=validate, fresh=True)
        finally:
            if fresh:
                conn.close()
        result = HttpResponse(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
        if self.validate if validate is None else validate:
            rpc_method = msg.get("method") if isinstance(msg, dict) and "id" in msg else None
            for m in result.messages:
                check_message(m, rpc_method if isinstance(m, dict) and "method" not in m else None)
        return result

    def stop(self, timeout: float = 5.0) -> int:
        if self._conn is not None:
            self._conn.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        finally:
            self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()

    def __enter__(self) -> HttpServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


def complete_mrtr_params(first: dict[str, Any], result: dict[str, Any], starts_at: str) -> dict[str, Any]:
    """The retry's params: the original params plus the answer and the echoed requestState."""
    params = dict(first["params"])
    params["inputResponses"] = {"startsAt": {"action": "accept", "content": {"startsAt": starts_at}}}
    params["requestState"] = result["requestState"]
    return params

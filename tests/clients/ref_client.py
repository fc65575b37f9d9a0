"""The reference MCP 2026-07-28 client of client mode, and its one-bug variants (`--bug NAME`).

    python tests/clients/ref_client.py [--bug NAME] SERVER COMMAND ...   # stdio: launches SERVER
    python tests/clients/ref_client.py [--bug NAME] [--url] URL          # Streamable HTTP

A small client with a fixed job: server/discover, tools/list, tools/call of the first tool,
resources/list and prompts/list sent together (two requests in flight), resources/read,
prompts/get; answering every input_required round (elicitations are declined, sampling gets a
fixed text, roots an empty list) and -32022 with a version the server listed. After each step it
prints one JSON line saying what it understood:
    {"step": METHOD, "outcome": "complete"|"input_required"|"error"|"invalid",
     "resultType": ... , "code": ...}
It is written from the spec with the standard library only (it must not share code with the
harness that judges it), and it is correct: a campaign against it must find nothing. Each
`--bug` switches on one realistic mistake and names the DIGEST rule it breaks (`--list-bugs`).
"""

from __future__ import annotations

import base64
import json
import queue
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from typing import Any

VERSION = "2026-07-28"
LEGACY_VERSION = "2025-11-25"
PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"
CI = "io.modelcontextprotocol/clientInfo"
CAPABILITIES = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}
MRTR_METHODS = ("tools/call", "resources/read", "prompts/get")
NAME_FIELD = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
TIMEOUT = 5.0
MAX_ROUNDS = 8

BUGS = {
    "reuse-id": "RPC-05: the two requests sent together share one id",
    "drop-request-state": "MRTR-10: the retry leaves out the requestState it was given",
    "retry-same-id": "MRTR-09: the retry reuses the id of the request it retries",
    "missing-resulttype-error": "RT-05: a result without resultType is read as an error",
    "send-response": "STDIO-04/HTTP-04: answers input requests with a JSON-RPC response frame first",
    "forget-meta-on-retry": "META-04: the retry is sent without params._meta",
}
_MISSING = object()
_SAFE = re.compile(r"^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$")


class StdioPeer:
    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def write(self, msg: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def exchange(self, msgs: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
        """Send all, then wait for one response per distinct id (ignoring everything else)."""
        for m in msgs:
            self.write(m)
        wanted = {_key(m["id"]) for m in msgs}
        got: dict[Any, dict[str, Any]] = {}
        while wanted - got.keys():
            try:
                line = self.lines.get(timeout=TIMEOUT)
            except queue.Empty:
                break
            if line is None:
                break
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # not JSON (a banner, a broken frame): not a message
            if not isinstance(msg, dict) or "method" in msg or "id" not in msg:
                continue  # a notification, or a request a 2026 server must not send: never answered
            key = _key(msg["id"])
            if key in wanted and key not in got and ("result" in msg or "error" in msg):
                got[key] = msg  # later copies (duplicates) and unknown or null ids are ignored
        return [got.get(_key(m["id"])) for m in msgs]

    def close(self) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class HttpPeer:
    def __init__(self, url: str) -> None:
        self.url = url
        self.version = VERSION  # the header value when a request has no _meta (the legacy era)

    def post(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        headers["MCP-Protocol-Version"] = str(meta.get(PV, self.version))
        if "method" in msg:
            headers["Mcp-Method"] = msg["method"]
            field = NAME_FIELD.get(msg["method"])
            if field and isinstance(params.get(field), str):
                headers["Mcp-Name"] = _header_value(params[field])
        req = urllib.request.Request(self.url, data=json.dumps(msg).encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
                body, ctype = resp.read(), resp.headers.get("Content-Type", "")
        except urllib.error.HTTPError as exc:
            body, ctype = exc.read(), exc.headers.get("Content-Type", "")
        except (urllib.error.URLError, OSError):
            return None
        for m in _messages(ctype, body):
            if isinstance(m, dict) and "method" not in m and _key(m.get("id")) == _key(msg.get("id")):
                return m
        return None

    def write(self, msg: Any) -> None:
        self.post(msg)

    def exchange(self, msgs: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
        out: list[dict[str, Any] | None] = [None] * len(msgs)

        def one(i: int) -> None:
            out[i] = self.post(msgs[i])

        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(msgs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return out

    def close(self) -> None:
        pass


def _messages(ctype: str, body: bytes) -> list[Any]:
    if ctype.startswith("text/event-stream"):
        out, data = [], []
        for line in body.decode("utf-8", "replace").splitlines() + [""]:
            if line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
            elif line == "" and data:
                try:
                    out.append(json.loads("\n".join(data)))
                except ValueError:
                    pass
                data = []
        return out
    try:
        return [json.loads(body)]
    except ValueError:
        return []


def _header_value(value: str) -> str:
    if _SAFE.match(value) and not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


def _key(rid: Any) -> tuple[str, Any]:
    return (type(rid).__name__, rid)


class Client:
    def __init__(self, peer: StdioPeer | HttpPeer, bug: str | None) -> None:
        self.peer = peer
        self.bug = bug
        self.next_id = 0
        self.version = VERSION
        self.last_result: dict[str, Any] = {}
        self.legacy = False  # the server is a 2025-11-25 one: initialize done, no per-request _meta

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def meta(self) -> dict[str, Any]:
        return {PV: self.version, CC: CAPABILITIES, CI: {"name": "tempest-ref-client", "version": "1.0"}}

    def request(self, method: str, params: dict[str, Any], rid: int | None = None) -> dict[str, Any]:
        body = dict(params) if self.legacy else {**params, "_meta": self.meta()}
        return {"jsonrpc": "2.0", "id": self.new_id() if rid is None else rid, "method": method, "params": body}

    def fall_back_to_legacy(self) -> None:
        """DIGEST 5.3: discover got no modern answer, so try the 2025-11-25 handshake."""
        init = {"jsonrpc": "2.0", "id": self.new_id(), "method": "initialize", "params": {
            "protocolVersion": LEGACY_VERSION, "capabilities": CAPABILITIES,
            "clientInfo": {"name": "tempest-ref-client", "version": "1.0"}}}
        answer = self.peer.exchange([init])[0]
        if answer is not None and isinstance(answer.get("result"), dict):
            self.legacy = True
            if isinstance(self.peer, HttpPeer):
                self.peer.version = LEGACY_VERSION
            self.peer.write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, method: str, params: dict[str, Any], sent: dict[str, Any] | None = None,
             first: dict[str, Any] | None = None) -> dict[str, Any]:
        """One job step, every round included; returns what the client understood. `sent` and
        `first`: the step's first request, already sent, and its answer."""
        rounds = version_retries = 0
        current = dict(params)
        msg = sent if sent is not None else self.request(method, current)
        resp = first
        while True:
            if resp is None:
                resp = self.peer.exchange([msg])[0]
            if resp is None:
                return reading(method, "error", note="no response")
            if "error" in resp:
                err = resp["error"] if isinstance(resp["error"], dict) else {}
                code = err.get("code")
                data = err.get("data") if isinstance(err.get("data"), dict) else {}
                supported = data.get("supported")
                if (code == -32022 and version_retries == 0 and isinstance(supported, list)
                        and VERSION in supported):
                    version_retries += 1
                    self.version = VERSION
                    msg, resp = self.request(method, current), None
                    continue
                return reading(method, "error", code=code if isinstance(code, int) else None)
            result = resp.get("result")
            if not isinstance(result, dict):
                return reading(method, "invalid")
            rtype = result.get("resultType", _MISSING)
            self.last_result = result
            if rtype is _MISSING:
                if self.bug == "missing-resulttype-error":
                    return reading(method, "error")
                return reading(method, "complete")  # RT-05: absent means complete
            if rtype == "complete":
                return reading(method, "complete", rtype)
            if rtype != "input_required" or method not in MRTR_METHODS:
                return reading(method, "invalid", rtype)  # RT-04: unknown values are invalid
            if rounds >= MAX_ROUNDS:
                return reading(method, "input_required", rtype)
            retry = self.retry_params(params, result)
            if retry is None:
                return reading(method, "invalid", rtype)
            if self.bug == "send-response" and "inputResponses" in retry:
                self.peer.write({"jsonrpc": "2.0", "id": msg["id"],
                                 "result": {"inputResponses": retry["inputResponses"]}})
            rounds += 1
            current = retry
            msg = self.request(method, current, rid=msg["id"] if self.bug == "retry-same-id" else None)
            if self.bug == "forget-meta-on-retry":
                del msg["params"]["_meta"]
            resp = None

    def retry_params(self, params: dict[str, Any], result: dict[str, Any]) -> dict[str, Any] | None:
        requests = result.get("inputRequests", _MISSING)
        state = result.get("requestState", _MISSING)
        if requests is _MISSING and state is _MISSING:
            return None  # MRTR-02: nothing to act on
        if state is not _MISSING and not isinstance(state, str):
            return None
        retry = dict(params)  # the ORIGINAL params, never another request's (MRTR-12)
        if requests is not _MISSING:
            if not isinstance(requests, dict):
                return None
            answers = {}
            for key, req in requests.items():
                answer = fulfil(req)
                if answer is None:
                    return None
                answers[key] = answer
            retry["inputResponses"] = answers
        if state is not _MISSING and self.bug != "drop-request-state":
            retry["requestState"] = state  # echoed exactly (MRTR-10)
        return retry

    def job(self) -> None:
        discovered = self.call("server/discover", {})
        emit(discovered)
        if discovered["outcome"] == "error" and discovered["code"] != -32022:
            self.fall_back_to_legacy()
        self.last_result = {}
        emit(self.call("tools/list", {}))
        tools = self.last_result.get("tools")
        first = tools[0] if isinstance(tools, list) and tools and isinstance(tools[0], dict) else {}
        name = first.get("name") if isinstance(first.get("name"), str) else "echo"
        emit(self.call("tools/call", {"name": name, "arguments": {}}))
        pair = [self.request("resources/list", {}), self.request("prompts/list", {})]
        if self.bug == "reuse-id":
            pair[1]["id"] = pair[0]["id"]
        answers = self.peer.exchange(pair)
        if self.bug == "reuse-id":
            answers[1] = answers[1] or answers[0]
        for msg, answer in zip(pair, answers, strict=True):
            emit(self.call(msg["method"], {}, sent=msg, first=answer) if answer is not None
                 else reading(msg["method"], "error", note="no response"))
        emit(self.call("resources/read", {"uri": "tempest://r"}))
        emit(self.call("prompts/get", {"name": "greet"}))


def fulfil(req: Any) -> dict[str, Any] | None:
    if not isinstance(req, dict):
        return None
    method, params = req.get("method"), req.get("params")
    if method == "elicitation/create" and isinstance(params, dict) and params.get("mode", "form") in ("form", "url"):
        return {"action": "decline"}
    if method == "sampling/createMessage" and isinstance(params, dict) and isinstance(params.get("messages"), list):
        return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "tempest-ref"}
    if method == "roots/list" and (params is None or isinstance(params, dict)):
        return {"roots": []}
    return None


def reading(step: str, outcome: str, result_type: Any = None, *, code: int | None = None,
            note: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"step": step, "outcome": outcome, "resultType": result_type, "code": code}
    if note:
        out["note"] = note
    return out


def emit(r: dict[str, Any]) -> None:
    print(json.dumps(r), flush=True)


def main(argv: list[str]) -> int:
    bug = None
    if argv[:1] == ["--list-bugs"]:
        for name, what in BUGS.items():
            print(f"{name}\t{what}")
        return 0
    if argv[:1] == ["--bug"]:
        bug, argv = argv[1], argv[2:]
        if bug not in BUGS:
            print(f"ref_client: unknown bug {bug!r} (see --list-bugs)", file=sys.stderr)
            return 2
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "--url":
        argv = argv[1:]
    peer: StdioPeer | HttpPeer = HttpPeer(argv[0]) if argv[0].startswith(("http://", "https://")) else StdioPeer(argv)
    client = Client(peer, bug)
    try:
        client.job()
    finally:
        peer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

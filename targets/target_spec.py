"""Target specs: the one place a user's `--target` text becomes something a driver can open.

Parsing is strict and its errors are one line, because a typo in a CI job's `--target` should
read as a usage error, not as a traceback or, worse, as a fuzz campaign against the wrong host.
Non-loopback hosts are refused unless the caller allows them: fuzzing sends malformed traffic
and the load test sends a lot of it, neither of which should leave the machine by accident.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import shlex
import sys
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import urlsplit

from mcp_tempest.targets import auth_client
from mcp_tempest.targets.transcript import Transcript
from mcp_tempest.targets.transports import HTTP, STDIO, Transport

TargetKind = Literal["stdio", "http", "http+spawn"]

PORT_PLACEHOLDER: Final = "{port}"
DEFAULT_SPAWN_PATH: Final = "/mcp"
LOOPBACK_NAMES: Final = frozenset({"localhost", "localhost.", "ip6-localhost"})


class TargetError(ValueError):
    """A target that cannot be used; the message is one line meant for the user."""


@dataclass(frozen=True, slots=True)
class TargetSpec:
    """A parsed target.

    `argv` is the command for `stdio:` and the command template (with `{port}`) for
    `http+spawn:`; `url` is the endpoint for `http://`; `path` is the MCP endpoint path of the
    spawned instances (`/mcp` unless given); `isolate_network`: every process the harness starts
    for it gets a network namespace of its own (`targets.netns`); `coverage_rc`: where a
    code-coverage plan lives, empty when the target's code is not measured: coverage.py's rcfile
    for a Python target (`targets.code_coverage`), the V8 data folder for a Node one
    (`targets.node_coverage`).
    """

    kind: TargetKind
    text: str
    argv: tuple[str, ...] = ()
    url: str = ""
    path: str = DEFAULT_SPAWN_PATH
    is_default: bool = False
    isolate_network: bool = False
    coverage_rc: str = ""

    @property
    def transport(self) -> Transport:
        return STDIO if self.kind == "stdio" else HTTP

    def command_for_port(self, port: int) -> list[str]:
        """The `http+spawn:` command with every `{port}` replaced (str.replace, so JSON braces survive),
        and `{issuer}` by the URL of the harness's authorization server (`--auth`)."""
        return auth_client.with_issuer([arg.replace(PORT_PLACEHOLDER, str(port)) for arg in self.argv])

    def new_transcript(self) -> Transcript:
        return Transcript(target=self.text, transport=self.transport)

    def __str__(self) -> str:
        return self.text


def reference_command(*extra: str) -> list[str]:
    """How to start the embedded reference server with this very interpreter."""
    return [sys.executable, "-m", "mcp_tempest.targets.reference", *extra]


def default_target(transport: Literal["stdio", "http"] = "stdio", *bugs: str) -> TargetSpec:
    """The embedded default: the reference server, over stdio or as spawned HTTP instances.

    `bugs` switches mutants on (`--bug NAME` each), which is how the tests measure detection.
    """
    bug_args = [arg for name in bugs for arg in ("--bug", name)]
    if transport == "stdio":
        argv = tuple(reference_command("--transport", "stdio", *bug_args))
        return TargetSpec("stdio", "stdio:" + shlex.join(argv), argv=argv, is_default=True)
    argv = tuple(
        reference_command("--transport", "http", "--host", "127.0.0.1", "--port", PORT_PLACEHOLDER, *bug_args)
    )
    return TargetSpec("http+spawn", "http+spawn:" + shlex.join(argv), argv=argv, is_default=True)


def is_loopback_host(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_target(
    text: str | None,
    *,
    allow_remote: bool = False,
    spawn_path: str = DEFAULT_SPAWN_PATH,
    isolate_network: bool = False,
) -> TargetSpec:
    """Parse a `--target` value (None or empty means the embedded default over stdio).

    Raises TargetError with a one-line message on anything unusable.
    """
    spec = _parse_target(text, allow_remote=allow_remote, spawn_path=spawn_path)
    return isolated(spec) if isolate_network else spec


def isolated(spec: TargetSpec) -> TargetSpec:
    """`spec` with `--isolate-network` on; TargetError where that cannot be honoured."""
    from mcp_tempest.targets import netns

    if spec.kind == "http":
        raise TargetError("--isolate-network needs a target the harness starts (stdio: or http+spawn:), "
                          f"not a running endpoint: {spec.text!r}")
    ok, why = netns.available()
    if not ok:
        raise TargetError(f"--isolate-network: {why}")
    return dataclasses.replace(spec, isolate_network=True)


def _parse_target(text: str | None, *, allow_remote: bool, spawn_path: str) -> TargetSpec:
    if text is None or not text.strip():
        return default_target()
    text = text.strip()
    if text.startswith("stdio:"):
        argv = _split_command(text[len("stdio:") :], "stdio:")
        return TargetSpec("stdio", text, argv=argv)
    if text.startswith("http+spawn:"):
        argv = _split_command(text[len("http+spawn:") :], "http+spawn:")
        if not any(PORT_PLACEHOLDER in arg for arg in argv):
            raise TargetError(f"http+spawn: command must contain {PORT_PLACEHOLDER} where the port goes: {text!r}")
        if not spawn_path.startswith("/"):
            raise TargetError(f"endpoint path must start with '/': {spawn_path!r}")
        return TargetSpec("http+spawn", text, argv=argv, path=spawn_path)
    if text.startswith(("http://", "https://")):
        return _parse_url(text, allow_remote=allow_remote)
    raise TargetError(
        f"unknown target {text!r}: use stdio:<command>, http://127.0.0.1:PORT/PATH or http+spawn:<command with {{port}}>"
    )


def _split_command(rest: str, prefix: str) -> tuple[str, ...]:
    try:
        argv = tuple(shlex.split(rest))
    except ValueError as exc:
        raise TargetError(f"{prefix} command line does not parse ({exc}): {rest!r}") from None
    if not argv:
        raise TargetError(f"{prefix} needs a command line after the colon")
    return argv


def _parse_url(text: str, *, allow_remote: bool) -> TargetSpec:
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise TargetError(f"bad URL {text!r}: {exc}") from None
    host = parts.hostname
    if not host:
        raise TargetError(f"URL has no host: {text!r}")
    if parts.username or parts.password:
        raise TargetError(f"credentials in the target URL are not supported: {text!r}")
    if not allow_remote and not is_loopback_host(host):
        raise TargetError(
            f"refusing non-loopback host {host!r} (fuzz and load traffic stays on this machine; "
            "pass --allow-remote to override)"
        )
    if port == 0:
        raise TargetError(f"port 0 is not a running endpoint: {text!r}")
    path = parts.path or "/"
    return TargetSpec("http", text, url=text, path=path + (f"?{parts.query}" if parts.query else ""))

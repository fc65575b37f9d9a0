"""The `mcp-tempest` console script: one entry point that hands each command to its package.

Subcommands are imported lazily so that `mcp-tempest serve` does not pay for Hypothesis and
`mcp-tempest fuzz` never imports Locust: `load` runs in its own interpreter (`python -m mcp_tempest.load`),
because Locust monkey-patches the standard library with gevent on import.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from mcp_tempest.fuzz.config import (
    CONFIGURABLE,  # commands whose options may come from MCP_TEMPEST_* and pyproject.toml
)

USAGE = """usage: mcp-tempest COMMAND [options]

commands:
  serve    the reference MCP 2026-07-28 server (the embedded default target)
  probe    which protocol era a target speaks, and what it offers
  catalogue  what the server's catalogue costs the model in tokens; drift; untrusted text
  auth-server  a loopback OAuth authorization server to point a protected server at (--auth-issuer)
  frames   print generated (valid or malformed) client frames
  fuzz     a fuzz campaign against a target
  replay   re-run one reproduction file on a fresh target
  fuzz-client  play a scripted, hostile server and fuzz an MCP client
  load     a Locust load run with MRTR operations

`mcp-tempest COMMAND --help` describes each command; `--version` (on any command) prints the
version; `--no-color` (on any command, or NO_COLOR) prints no colour. Options may also come from MCP_TEMPEST_* variables and [tool.mcp-tempest] in
pyproject.toml (the command line wins; README: "Configuration")."""

def _serve(argv: list[str]) -> int:
    from mcp_tempest.targets.reference.cli import serve_main

    return serve_main(argv)


def _probe(argv: list[str]) -> int:
    from mcp_tempest.fuzz.probe_command import probe_main

    return probe_main(argv)


def _catalogue(argv: list[str]) -> int:
    from mcp_tempest.fuzz.catalogue_command import catalogue_main

    return catalogue_main(argv)


def _auth_server(argv: list[str]) -> int:
    from mcp_tempest.targets.auth_server import auth_server_main

    return auth_server_main(argv)


def _frames(argv: list[str]) -> int:
    from mcp_tempest.fuzz.frames_command import frames_main

    return frames_main(argv)


def _fuzz(argv: list[str]) -> int:
    from mcp_tempest.fuzz.campaign_command import fuzz_main

    return fuzz_main(argv)


def _fuzz_client(argv: list[str]) -> int:
    from mcp_tempest.fuzz.client.command import fuzz_client_main

    return fuzz_client_main(argv)


def _replay(argv: list[str]) -> int:
    from mcp_tempest.fuzz.replay import replay_main

    return replay_main(argv)


def _load(argv: list[str]) -> int:
    """Run Locust in a fresh interpreter: its gevent patching must not meet this process."""
    from mcp_tempest.fuzz.terminal_style import switched_off

    if switched_off():  # --no-color, for the interpreter that replaces this one
        os.environ["NO_COLOR"] = "1"
    os.execv(sys.executable, [sys.executable, "-m", "mcp_tempest.load", *argv])
    return 2  # not reached


COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "serve": _serve,
    "probe": _probe,
    "catalogue": _catalogue,
    "auth-server": _auth_server,
    "frames": _frames,
    "fuzz": _fuzz,
    "replay": _replay,
    "fuzz-client": _fuzz_client,
    "load": _load,
}


def version_line() -> str:
    """`mcp-tempest 0.1.0 (Hypothesis 6.170.17, Python 3.11.7)`: what a bug report needs."""
    from importlib.metadata import PackageNotFoundError, version

    def of(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    python = ".".join(str(n) for n in sys.version_info[:3])
    return f"mcp-tempest {of('mcp-tempest')} (Hypothesis {of('hypothesis')}, Python {python})"


def _take_no_color(args: list[str]) -> list[str]:
    """`args` without `--no-color` (before any `--`), colour switched off if it was there: every
    command takes it, so it is taken here, not by each command's parser (fuzz/terminal_style.py)."""
    from mcp_tempest.fuzz.terminal_style import NO_COLOR_FLAG, switch_off

    end = args.index("--") if "--" in args else len(args)
    if NO_COLOR_FLAG not in args[:end]:
        return args
    switch_off()
    return [a for a in args[:end] if a != NO_COLOR_FLAG] + args[end:]


def _asks_version(args: list[str]) -> bool:
    head = args[: args.index("--")] if "--" in args else args
    return "--version" in head


def _configured(name: str, args: list[str]) -> list[str]:
    """The command's arguments with MCP_TEMPEST_* and [tool.mcp-tempest] options in front."""
    if name not in CONFIGURABLE or any(a in ("-h", "--help") for a in args):
        return args
    import importlib

    from mcp_tempest.fuzz.config import apply_config

    module, builder = CONFIGURABLE[name]
    return apply_config(name, args, getattr(importlib.import_module(module), builder)())


def main(argv: list[str] | None = None) -> int:
    args = _take_no_color(list(sys.argv[1:] if argv is None else argv))
    if not args or args[0] in {"-h", "--help", "help"}:
        print(USAGE)
        return 0 if args else 2
    if args[0] in ("--version", "-V") or (args[0] in COMMANDS and _asks_version(args[1:])):
        print(version_line())
        return 0
    command = COMMANDS.get(args[0])
    if command is None:
        print(f"mcp-tempest: unknown command {args[0]!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    from mcp_tempest.fuzz.config import ConfigError
    from mcp_tempest.targets import renamed

    renamed.adopt_old_environment(os.environ)  # before anything reads one, children included
    try:
        rest = _take_no_color(_configured(args[0], args[1:]))  # also `no-color = true` configured
    except ConfigError as exc:
        print(f"mcp-tempest {args[0]}: {exc}", file=sys.stderr)
        return 2
    try:
        return command(rest)
    except KeyboardInterrupt:
        print(f"mcp-tempest {args[0]}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `mcp-tempest frames | head` closes our stdout early: that is the reader's choice, not an error.
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The `mcp-gauntlet` console script: one entry point that hands each command to its package.

Subcommands are imported lazily so that `mcp-gauntlet serve` does not pay for Hypothesis and
`mcp-gauntlet fuzz` never imports Locust: `load` runs in its own interpreter (`python -m load`),
because Locust monkey-patches the standard library with gevent on import.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

USAGE = """usage: mcp-gauntlet COMMAND [options]

commands:
  serve    the reference MCP 2026-07-28 server (the embedded default target)
  probe    which protocol era a target speaks, and what it offers
  frames   print generated (valid or malformed) client frames
  fuzz     a fuzz campaign against a target
  replay   re-run one reproduction file on a fresh target
  fuzz-client  play a scripted, hostile server and fuzz an MCP client
  load     a Locust load run with MRTR operations

`mcp-gauntlet COMMAND --help` describes each command."""


def _serve(argv: list[str]) -> int:
    from targets.reference.cli import serve_main

    return serve_main(argv)


def _probe(argv: list[str]) -> int:
    from targets.probe import probe_main

    return probe_main(argv)


def _frames(argv: list[str]) -> int:
    from strategies.frames_command import frames_main

    return frames_main(argv)


def _fuzz(argv: list[str]) -> int:
    from fuzz.campaign_command import fuzz_main

    return fuzz_main(argv)


def _fuzz_client(argv: list[str]) -> int:
    from fuzz.client.command import fuzz_client_main

    return fuzz_client_main(argv)


def _replay(argv: list[str]) -> int:
    from fuzz.replay import replay_main

    return replay_main(argv)


def _load(argv: list[str]) -> int:
    """Run Locust in a fresh interpreter: its gevent patching must not meet this process."""
    os.execv(sys.executable, [sys.executable, "-m", "load", *argv])
    return 2  # not reached


COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "serve": _serve,
    "probe": _probe,
    "frames": _frames,
    "fuzz": _fuzz,
    "replay": _replay,
    "fuzz-client": _fuzz_client,
    "load": _load,
}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help", "help"}:
        print(USAGE)
        return 0 if args else 2
    command = COMMANDS.get(args[0])
    if command is None:
        print(f"mcp-gauntlet: unknown command {args[0]!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    try:
        return command(args[1:])
    except KeyboardInterrupt:
        print(f"mcp-gauntlet {args[0]}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `mcp-gauntlet frames | head` closes our stdout early: that is the reader's choice, not an error.
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    raise SystemExit(main())

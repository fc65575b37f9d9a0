"""`mcp-tempest frames`: generated frames on stdout (strategies/frames_command.py), and on stderr
the one summary line, fuzz/verdict_line.py's `final_line`.

Why the line is on stderr: stdout carries frames only, so that it pipes into `jq` or a server
(CLI.md). Why this module: `strategies` is pure and imports nothing from `fuzz`
(ARCHITECTURE.md), so the words every command ends with are put here. Exit status: 0 printed,
2 bad input (the line says why: `frames: 0 frames: ERROR (unknown mutation 'x' (see --list))`),
130 interrupted; a reader that closes the pipe early (`frames | head`) is no error (0, no line).
"""

from __future__ import annotations

import sys

from mcp_tempest.fuzz.safe_text import visible
from mcp_tempest.fuzz.terminal_style import colour_on
from mcp_tempest.fuzz.verdict_line import final_line, plural
from mcp_tempest.strategies.frames_command import run_frames


def frames_main(argv: list[str]) -> int:
    """Entry point for `mcp-tempest frames ...` (the CLI passes the arguments after `frames`)."""
    try:
        outcome = run_frames(argv, sys.stdout)
    except BrokenPipeError:  # `frames ... | head`: the reader's choice
        return 0
    except KeyboardInterrupt:
        _summary("0 frames", 130, "interrupted")
        return 130
    if outcome is None:  # --help
        return 0
    _summary(plural(outcome.count, outcome.noun) + outcome.detail, outcome.status, visible(outcome.why))
    return outcome.status


def _summary(counts: str, status: int, why: str) -> None:
    sys.stderr.write(final_line("frames", counts, status, [why], colour=colour_on(sys.stderr)) + "\n")


if __name__ == "__main__":  # pragma: no cover - handy during development
    raise SystemExit(frames_main(sys.argv[1:]))

"""Helpers for tests that start a harness process and signal it.

Why: a suite started as a background job (`pytest &`, some CI runners) inherits SIGINT as
ignored, and a Python started with SIGINT ignored never raises KeyboardInterrupt. Tests that
send SIGINT therefore set the disposition of what they start themselves.
"""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """`preexec_fn` for a child that must react to SIGINT (and SIGTERM) as a foreground one would."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)

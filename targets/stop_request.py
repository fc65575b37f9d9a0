"""A stop asked for by a signal (SIGINT, SIGTERM), honoured where the harness can stop cleanly.

Why the handler does not raise KeyboardInterrupt, as Python's own SIGINT handler does: a
handler runs between any two bytecodes of the main thread, inside Hypothesis' gc callback as
well, where an exception is printed as "Exception ignored" and dropped, and the campaign runs
on (1 of 9 SIGTERMs was lost that way). So the handler only records the request, and the
harness raises KeyboardInterrupt itself where it can stop cleanly:

- `stop_point()`: before each case and each job (fuzz/job.py, fuzz/campaign.py), every time
  it is reached once a stop was asked for;
- `wait_point()`: in the drivers' waits for the target, so a stop does not wait out a long
  `--timeout`; once per request, so the cleanup that follows (closing processes, draining their
  output) is not interrupted again.

A second signal while the first is being honoured raises at once: the user means it.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

_asked: int | None = None  # the signal that asked for the stop
_waits_interrupted = False  # wait_point has raised for this request


def _record(signum: int, frame: Any) -> None:
    global _asked
    if _asked is not None:
        raise KeyboardInterrupt  # the second signal
    _asked = signum


def requested() -> int | None:
    """The signal that asked for a stop, or None."""
    return _asked


def stop_point() -> None:
    """Where the harness may stop: raises KeyboardInterrupt once a stop was asked for."""
    if _asked is not None:
        raise KeyboardInterrupt


def wait_point() -> None:
    """In a wait for the target: raises KeyboardInterrupt the first time after a stop was asked."""
    global _waits_interrupted
    if _asked is not None and not _waits_interrupted:
        _waits_interrupted = True
        raise KeyboardInterrupt


@contextlib.contextmanager
def honoured(signals: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)) -> Iterator[None]:
    """Record these signals as stop requests while the block runs (main thread only: elsewhere
    Python does not let a handler be set, and the default behaviour stays)."""
    global _asked, _waits_interrupted
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _asked, _waits_interrupted = None, False
    previous = {s: signal.getsignal(s) for s in signals}
    for s in signals:
        signal.signal(s, _record)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _asked, _waits_interrupted = None, False

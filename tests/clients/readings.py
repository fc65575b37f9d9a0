"""What the example clients under tests/clients/ print: one JSON line per job step.

    {"step": METHOD, "outcome": "complete"|"input_required"|"error"|"invalid",
     "resultType": ..., "code": ..., "note": ...}

The harness's client rules read these lines (RT-04, RT-05): "complete" is a result the
application got as final content, "error" a JSON-RPC error surfaced as one (with its code),
"invalid" anything the client refused to take (a validation failure, an unknown resultType).
"""

from __future__ import annotations

import json
from typing import Any

STEP_TIMEOUT = 8.0


def emit(step: str, outcome: str, result_type: Any = None, *, code: int | None = None, note: str = "") -> None:
    line: dict[str, Any] = {"step": step, "outcome": outcome, "resultType": result_type, "code": code}
    if note:
        line["note"] = note[:300]
    print(json.dumps(line), flush=True)


def outcome_of_exception(exc: BaseException) -> tuple[str]:
    """Any exception that is not a JSON-RPC error: the client refused what it got (or timed out)."""
    return ("invalid",)

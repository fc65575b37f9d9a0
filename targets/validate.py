"""Checks every command runs on its input before it starts work: one line for the user, never a traceback.

Why here: probe, fuzz, replay, load, serve and frames take the same kinds of values (seconds,
sizes, output directories, database URLs). Each command calls these and prints the
`InputError` message as its one line with exit status 2.
"""

from __future__ import annotations

import math
import uuid
from pathlib import Path
from typing import Any, Final, get_args
from urllib.parse import urlsplit

from mcp_tempest.targets import renamed
from mcp_tempest.targets.target_spec import is_loopback_host
from mcp_tempest.targets.transcript import EventKind

# The longest wait any option may ask for: a week. More than that is a typo, and values near
# float's range overflow poll()'s milliseconds and socket timeouts.
MAX_SECONDS: Final = 7 * 24 * 3600.0
MAX_FRAME_SIZE: Final = 2**31 - 1


class InputError(ValueError):
    """A value given to a command is unusable; the message is one line."""


def seconds(value: float | None, flag: str, *, zero_ok: bool = False, maximum: float = MAX_SECONDS) -> float | None:
    """`value` when it is a finite number of seconds in range (None passes through)."""
    if value is None:
        return None
    low_ok = value >= 0 if zero_ok else value > 0
    if not isinstance(value, int | float) or math.isnan(value) or not low_ok or value > maximum:
        low = "0" if zero_ok else "more than 0"
        raise InputError(f"{flag} must be a number of seconds from {low} to {maximum:g}, not {value!r}")
    return float(value)


def frame_size(value: int, flag: str = "--size") -> int:
    """A line size a frame can have (below 2 GiB: bigger ones cannot even be built safely)."""
    if not 0 <= value <= MAX_FRAME_SIZE:
        raise InputError(f"{flag} must be from 0 to {MAX_FRAME_SIZE} bytes, not {value}")
    return value


def writable_dir(path: str | Path, flag: str) -> Path:
    """`path` when it is, or can become, a directory we can create files in. Nothing is created:
    a missing directory is judged by its nearest existing parent. Checked by writing a file,
    since a read-only mount refuses even root, which `os.access` would not tell."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InputError(f"{flag} {p} is a file, not a directory")
    existing = p
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(f"{flag} {p} cannot be created: {existing} is a file")
    probe = existing / f".mcp-tempest-write-check-{uuid.uuid4().hex}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise InputError(f"{flag} {p} is not writable: {exc.strerror or exc}") from None
    return p


def database_url(spec: str | None, *, allow_remote: bool, flag: str = "--database") -> str | None:
    """A `redis://HOST:PORT/N` example database must be on this machine unless --allow-remote
    (a directory, or a unix:// socket, is local by construction). Decided from the URL alone:
    nothing is resolved or connected to here."""
    if spec is None or not spec.startswith(("redis://", "rediss://")):
        return spec
    try:
        host = urlsplit(spec).hostname or "localhost"
    except ValueError as exc:
        raise InputError(f"{flag} {spec!r} is not a URL: {exc}") from None
    if not allow_remote and not is_loopback_host(host):
        raise InputError(f"{flag}: refusing non-loopback Redis host {host!r} (pass --allow-remote to allow it)")
    return spec


# --- replay files ---

_EVENT_FIELDS: Final[dict[str, tuple[type, ...]]] = {
    "kind": (str,), "t": (int, float), "proc": (int,), "raw": (str,), "raw_b64": (str,), "raw_made": (dict,),
    "status": (int, type(None)), "headers": (dict, type(None)), "note": (str,), "ref": (int, type(None)),
}
_DOC_FIELDS: Final[dict[str, tuple[type, ...]]] = {
    "id": (str, type(None)), "target": (str, type(None)), "property": (str, type(None)),
    "rule": (str, type(None)), "transport": (str, type(None)), "case": (dict, type(None)),
    "seed": (int, type(None)),
}
_KINDS: Final = frozenset(get_args(EventKind))  # the transcript's own list: one place names the kinds


def repro_document(doc: Any, name: str) -> dict[str, Any]:
    """`doc` when it has the shape of a reproduction file, else InputError naming the first bad field."""
    if not isinstance(doc, dict):
        raise InputError(f"{name} is not an mcp-tempest reproduction file (not a JSON object)")
    transcript = doc.get("transcript")
    if not isinstance(transcript, dict):
        raise InputError(f"{name} is not an mcp-tempest reproduction file (no transcript)")
    _typed(doc, _DOC_FIELDS, name)
    doc = renamed.upgrade_document(doc)  # a file written before the rename replays as it did
    if not isinstance(transcript.get("target"), str) or transcript.get("transport") not in ("stdio", "http"):
        raise InputError(f"{name}: transcript.target must be a string and transcript.transport stdio or http")
    events = transcript.get("events", [])
    if not isinstance(events, list):
        raise InputError(f"{name}: transcript.events must be a list")
    for i, event in enumerate(events):
        where = f"{name}: transcript.events[{i}]"
        if not isinstance(event, dict) or event.get("kind") not in _KINDS:
            raise InputError(f"{where} is not an event (kind must be one of {', '.join(sorted(_KINDS))})")
        _typed(event, _EVENT_FIELDS, where)
        if isinstance(event.get("headers"), dict) and not all(
            isinstance(k, str) and isinstance(v, str) for k, v in event["headers"].items()
        ):
            raise InputError(f"{where}.headers must map strings to strings")
    case = doc.get("case")
    if isinstance(case, dict):
        (_client_case if case.get("mode") == "client" else _server_case)(case, f"{name}: case")
    return doc


_NUMBER: Final = (int, float)
_NONE: Final = type(None)
_CASE_FIELDS: Final[dict[str, tuple[type, ...]]] = {
    "property": (str,), "steps": (list,), "warm": (list,), "params": (dict,), "mode": (str,),
}
_STEP_FIELDS: Final[dict[str, tuple[type, ...]]] = {
    "proc": (int,), "frame": (dict, list, _NONE), "raw": (str,), "raw_b64": (str,), "raw_made": (dict,),
    "frame_made": (dict,), "headers": (dict, _NONE), "wait": (str,), "label": (str,), "bind": (list,),
    "group": (int, _NONE), "expect": (dict, _NONE), "mutation": (str, _NONE), "timeout": (*_NUMBER, _NONE),
    "http_method": (str,),
}
_BIND_FIELDS: Final[dict[str, tuple[type, ...]]] = {
    "target": (list,), "source": (int,), "path": (list,), "transform": (str,)}
_PLAY_FIELDS: Final[dict[str, tuple[type, ...]]] = {
    "kind": (str,), "result": (dict, _NONE), "code": (int, _NONE), "message": (str, _NONE), "probe": (str, _NONE),
    "before": (list,), "duplicate": (bool,), "sse": (bool,), "hold": _NUMBER,
}
_WAITS: Final = ("response", "none", "exit", "stream")


def _server_case(case: dict[str, Any], where: str) -> None:
    """The shape `fuzz.properties.case.Case.from_json` reads; the first bad field, in one line."""
    _typed(case, _CASE_FIELDS, where)
    if not all(isinstance(p, int) and not isinstance(p, bool) for p in case.get("warm", [])):
        raise InputError(f"{where}.warm must be a list of process numbers")
    for i, step in enumerate(case.get("steps", [])):
        at = f"{where}.steps[{i}]"
        if not isinstance(step, dict):
            raise InputError(f"{at} must be an object, not {type(step).__name__}")
        _typed(step, _STEP_FIELDS, at)
        if step.get("proc", 0) < 0:
            raise InputError(f"{at}.proc must not be negative")
        if isinstance(step.get("headers"), dict) and not all(
                isinstance(k, str) and isinstance(v, str) for k, v in step["headers"].items()):
            raise InputError(f"{at}.headers must map strings to strings")
        if step.get("wait", "response") not in _WAITS:
            raise InputError(f"{at}.wait must be one of {', '.join(_WAITS)}")
        for j, bind in enumerate(step.get("bind", [])):
            if not isinstance(bind, dict) or not {"target", "source", "path"} <= bind.keys():
                raise InputError(f"{at}.bind[{j}] must be an object with target, source and path")
            _typed(bind, _BIND_FIELDS, f"{at}.bind[{j}]")


def _client_case(case: dict[str, Any], where: str) -> None:
    """The shape `fuzz.client.case.ClientCase.from_json` reads."""
    plays = case.get("plays", {})
    if not isinstance(plays, dict):
        raise InputError(f"{where}.plays must be an object (method -> list of plays), not {type(plays).__name__}")
    for method, listed in plays.items():
        if not isinstance(listed, list):
            raise InputError(f"{where}.plays[{method!r}] must be a list, not {type(listed).__name__}")
        for i, play in enumerate(listed):
            at = f"{where}.plays[{method!r}][{i}]"
            if not isinstance(play, dict) or not isinstance(play.get("kind"), str):
                raise InputError(f"{at} must be an object with a kind")
            _typed(play, _PLAY_FIELDS, at)
            if not all(isinstance(b, str) for b in play.get("before", [])):
                raise InputError(f"{at}.before must be a list of strings")


def _typed(data: dict[str, Any], fields: dict[str, tuple[type, ...]], where: str) -> None:
    for key, types in fields.items():
        if key in data:
            value = data[key]
            # bool is an int to isinstance, but never a valid count, index or status here
            if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
                names = " or ".join("null" if t is type(None) else t.__name__ for t in types)
                raise InputError(f"{where}: field {key!r} must be {names}, not {type(value).__name__}")


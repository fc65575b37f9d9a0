"""A case: what one example sends, to which process, and what answers it depends on.

Properties draw cases; the executor plays them; the replay file stores them. Keeping a case as
plain data (frames, process numbers, bindings) rather than as code is what makes a finding
replayable by `mcp-tempest replay` months later: the frames on disk are the frames re-sent.

A frame may depend on what the server said earlier (an MRTR retry echoes `requestState`, answers
`inputRequests`, reuses a handle). Such a dependency is a Binding: "before sending step i, put
at this path the value found at that path of step j's response, transformed like so". Bindings
are resolved against the live responses of the run being played, so a replay on a fresh target
echoes that target's state, not a stale copy of the original one.
"""

from __future__ import annotations

import base64
import copy
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from mcp_tempest.strategies.expectation import Expectation
from mcp_tempest.targets import frame_recipe

# "exit": no frame; close the process's stdin (a stdio shutdown) and record what it says until it exits.
# "stream": HTTP only; POST the frame, read its SSE stream until the first message, then close the
# stream, as an HTTP client ends a listen (SUB-07).
Await = Literal["response", "none", "exit", "stream"]
Path = tuple[str | int, ...]


#: Binding source for values the executor makes up per run (e.g. a fresh name), not the server.
RUN_SOURCE = -1


class BindingError(LookupError):
    """A binding's source is missing (no response, or no such path): the step cannot be built."""


@dataclass(slots=True)
class Binding:
    """Put `transform(value of step `source` response at `path`)` at `target` in the frame."""

    target: Path
    source: int
    path: Path
    transform: str = "echo"
    arg: Any = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "target": list(self.target), "source": self.source, "path": list(self.path),
            "transform": self.transform,
        }
        if self.arg is not None:
            out["arg"] = self.arg
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Binding:
        return cls(
            target=tuple(data["target"]), source=int(data["source"]), path=tuple(data["path"]),
            transform=str(data.get("transform", "echo")), arg=data.get("arg"),
        )


@dataclass(slots=True)
class Step:
    """One frame to one logical process.

    `proc` numbers logical processes within the case (0, 1, 2 ...); a number not seen before
    means a new process (or, over HTTP, a new instance where the target can spawn them).
    `group` puts consecutive steps with the same group in flight at once.
    `expect` is what the oracle should expect of the server's reaction to this frame, as the
    strategy that made a malformed frame described it; None for a valid frame.
    `wait="exit"` sends nothing: it shuts a stdio process down (its stdin closed, what it still
    writes recorded, its exit too); later steps to that process are skipped.
    """

    proc: int
    frame: dict[str, Any] | None = None
    raw: bytes | None = None
    headers: dict[str, str] | None = None
    wait: Await = "response"
    label: str = ""
    bind: list[Binding] = field(default_factory=list)
    group: int | None = None
    expect: Expectation | None = None
    mutation: str | None = None
    timeout: float | None = None
    input_schema: dict[str, Any] | None = None  # a tool's, so HTTP Mcp-Param-* headers mirror the body
    http_method: str = "POST"  # over HTTP: GET or DELETE probes the endpoint itself (DIGEST 7.4)

    @property
    def method(self) -> str | None:
        if isinstance(self.frame, dict) and isinstance(self.frame.get("method"), str):
            return self.frame["method"]
        return None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"proc": self.proc, "wait": self.wait}
        made = frame_recipe.dump_bytes(self.raw, self.frame, "frame")  # a huge frame as its recipe
        if made is not None:
            out.update(made)
        elif self.frame is not None:
            out["frame"] = self.frame
        if self.raw is not None and made is None:
            try:
                out["raw"] = self.raw.decode("utf-8")
            except UnicodeDecodeError:
                out["raw_b64"] = base64.b64encode(self.raw).decode("ascii")
        for name in ("headers", "label", "group", "mutation", "timeout", "input_schema"):
            value = getattr(self, name)
            if value not in (None, ""):
                out[name] = value
        if self.expect is not None:
            out["expect"] = self.expect.to_json()
        if self.bind:
            out["bind"] = [b.to_json() for b in self.bind]
        if self.http_method != "POST":
            out["http_method"] = self.http_method
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Step:
        raw: bytes | None = None
        frame = data.get("frame")
        made = frame_recipe.load_bytes(data, "frame")
        if made is not None:
            raw, frame = made
        elif "raw" in data:
            raw = str(data["raw"]).encode("utf-8")
        elif "raw_b64" in data:
            raw = base64.b64decode(data["raw_b64"])
        return cls(
            proc=int(data.get("proc", 0)), frame=frame, raw=raw, headers=data.get("headers"),
            wait=data.get("wait", "response"), label=data.get("label", ""),
            bind=[Binding.from_json(b) for b in data.get("bind", [])], group=data.get("group"),
            expect=Expectation.from_json(dict(data["expect"])) if data.get("expect") else None,
            mutation=data.get("mutation"), timeout=data.get("timeout"),
            input_schema=data.get("input_schema"), http_method=str(data.get("http_method", "POST")),
        )


@dataclass(slots=True)
class Case:
    """Everything one example does. `warm` lists the logical processes that may be a process
    that already served earlier examples (only during a campaign; a replay starts all fresh)."""

    property: str
    steps: list[Step]
    warm: list[int] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)  # what the property's check needs

    def procs(self) -> list[int]:
        return sorted({s.proc for s in self.steps})

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"property": self.property, "steps": [s.to_json() for s in self.steps]}
        if self.warm:
            out["warm"] = list(self.warm)
        if self.params:
            out["params"] = self.params
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Case:
        return cls(
            property=str(data.get("property", "")), steps=[Step.from_json(s) for s in data.get("steps", [])],
            warm=list(data.get("warm", [])), params=dict(data.get("params", {})),
        )

    def describe(self) -> str:
        """A short human description (what Hypothesis prints as the falsifying example)."""
        parts = []
        for i, s in enumerate(self.steps):
            what = s.mutation or s.method or ("raw" if s.raw is not None else "?")
            parts.append(f"{i}:p{s.proc}:{s.label or what}")
        return f"{self.property}[{' '.join(parts)}]"

    def __repr__(self) -> str:  # Hypothesis shows this for a falsifying example
        return self.describe()


# --- resolving bindings ---


def get_path(value: Any, path: Sequence[str | int]) -> Any:
    for key in path:
        if isinstance(value, dict) and isinstance(key, str) and key in value:
            value = value[key]
        elif isinstance(value, list) and isinstance(key, int) and -len(value) <= key < len(value):
            value = value[key]
        else:
            raise BindingError(f"no {'/'.join(map(str, path))}")
    return value


def set_path(value: dict[str, Any], path: Sequence[str | int], new: Any) -> None:
    node: Any = value
    for key in path[:-1]:
        if isinstance(node, dict):
            node = node.setdefault(key, {})
        else:
            raise BindingError(f"cannot set {'/'.join(map(str, path))}")
    if isinstance(node, dict):
        node[path[-1]] = new
    elif isinstance(node, list) and isinstance(path[-1], int):
        node[path[-1]] = new
    else:
        raise BindingError(f"cannot set {'/'.join(map(str, path))}")


def build_frame(step: Step, responses: Mapping[int, Any]) -> dict[str, Any] | None:
    """The frame with its bindings resolved; raises BindingError when a source is missing."""
    if step.frame is None:
        return None
    if not step.bind:
        return step.frame
    frame = copy.deepcopy(step.frame)
    for b in step.bind:
        if b.source not in responses or responses[b.source] is None:
            raise BindingError(f"step {b.source} has no response")
        value = get_path(responses[b.source], b.path)
        set_path(frame, b.target, apply_transform(b.transform, value, b.arg))
    return frame


def apply_transform(name: str, value: Any, arg: Any = None) -> Any:
    """The named transformations a binding may apply; each is deterministic given `arg`."""
    if name == "echo":
        return value
    if name == "answers":
        from mcp_tempest.fuzz.properties.answers import answer_input_requests

        return answer_input_requests(value, arg or {})
    if not isinstance(value, str):
        raise BindingError(f"transform {name} needs a string, got {type(value).__name__}")
    if name == "flip":
        return tamper_flip(value, int(arg or 0))
    if name == "truncate":
        keep = max(len(value) - max(int(arg or 1), 1), 0)
        return value[:keep]
    if name == "append":
        return value + str(arg if arg is not None else "A")
    if name == "structured":
        return tamper_structured(value, int(arg or 0))
    if name == "format":
        return str(arg or "{}").replace("{}", value)
    if name == "forge":  # a state the server never minted, in place of the one it did (state-forged)
        from mcp_tempest.strategies.malformed import FORGED_STATES

        forged = FORGED_STATES[int(arg or 0) % len(FORGED_STATES)]
        return forged if forged != value else forged + "A"
    raise BindingError(f"unknown transform {name!r}")


_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def tamper_flip(value: str, seed: int) -> str:
    """Change one character, staying in the same alphabet so a decoder does not simply choke.

    The last character of each dot-separated segment is never chosen: in base64 it may carry
    only padding bits, and a change there can decode to the very same bytes, which a correct
    server would rightly accept.
    """
    if not value:
        return "A"
    positions = [i for i in range(len(value)) if i + 1 < len(value) and value[i + 1] != "." and value[i] != "."]
    if not positions:
        return "A" + value  # too short to flip safely: shift every character's bits instead
    i = positions[seed % len(positions)]
    old = value[i]
    pool = _ALPHABET if old in _ALPHABET else "~!*-_"
    new = pool[(pool.find(old) + 1 + seed // len(positions)) % len(pool)]
    if new == old:
        new = "B" if old == "A" else "A"
    return value[:i] + new + value[i + 1 :]


def tamper_structured(value: str, seed: int) -> str:
    """If the opaque state is readable (base64 or dotted base64 of JSON), change a value inside
    and re-encode it with the signature, if any, left as it was.

    This is the tamper an attacker tries first, and the one that distinguishes a server that
    verifies its state from one that merely parses it: a flipped byte breaks both.
    """
    segments = value.split(".")
    for index, seg in enumerate(segments):
        decoded = _b64_json(seg)
        if isinstance(decoded, dict | list):
            changed = _mutate_json(decoded, seed)
            if changed is None:
                continue
            encoded = _b64_encode_like(seg, orjson.dumps(changed))
            return ".".join(segments[:index] + [encoded] + segments[index + 1 :])
    return tamper_flip(value, seed)


def _b64_json(seg: str) -> Any:
    if len(seg) < 4:
        return None
    padded = seg + "=" * (-len(seg) % 4)
    for decoder in (base64.urlsafe_b64decode, base64.b64decode):
        try:
            raw = decoder(padded)
            return orjson.loads(raw)
        except (ValueError, orjson.JSONDecodeError):
            continue
    return None


def _b64_encode_like(original: str, raw: bytes) -> str:
    urlsafe = "-" in original or "_" in original or ("+" not in original and "/" not in original)
    out = (base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw)).decode("ascii")
    return out if original.endswith("=") else out.rstrip("=")


def _mutate_json(value: Any, seed: int) -> Any:
    """Change one scalar leaf (the `seed`-th, cyclically); None when there is none."""
    leaves: list[Sequence[str | int]] = []

    def walk(node: Any, path: tuple[str | int, ...]) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, (*path, k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, (*path, i))
        else:
            leaves.append(path)

    walk(value, ())
    if not leaves:
        return None
    path = leaves[seed % len(leaves)]
    copy_ = copy.deepcopy(value)
    old = get_path(copy_, path) if path else copy_
    if isinstance(old, bool):
        new: Any = not old
    elif isinstance(old, int | float):
        new = old + 1
    elif isinstance(old, str):
        new = old + "x" if old else "x"
    else:
        new = "x"
    if not path:
        return new
    node: Any = copy_
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new
    return copy_


def digest(obj: Any) -> str:
    return hashlib.sha1(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)).hexdigest()[:12]

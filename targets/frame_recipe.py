"""Huge frames written as how they are made, not as their bytes, in transcripts and repro files.

Why: the `huge-frame` mutation pads a frame to 11 MiB (and `oversized-frame` to its size
parameter); written whole, every transcript and repro file that holds one carries it, as a
JSON string and again as the parsed message. A generated huge frame is a short frame around one
long run of one repeated byte, so it is written as a recipe: literal pieces and runs, enough to
make the exact bytes again, with the length, a SHA-256 of the bytes (checked when they are made
again) and a readable prefix for people and reports. A send that is not made of long runs is
kept whole: nothing is ever dropped.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Final

import orjson

#: Sends longer than this are written as a recipe (when they are made of runs).
RECIPE_OVER: Final = 64 * 1024
#: A repeated byte counts as a run from this many repetitions on.
MIN_RUN: Final = 4096
PREFIX_CHARS: Final = 200
#: The most a recipe read from a file may make (as much as a `.json.gz` repro may inflate to).
MAX_MADE: Final = 128 * 1024 * 1024


def _text(b: bytes) -> str:
    return b.decode("latin-1")  # every byte one character: exact both ways, and JSON-safe


def runs(raw: bytes) -> list[tuple[int, int]]:
    """The (start, end) of every maximal run of one byte at least MIN_RUN long, in order.

    Why not a regex: `(.)\\1{n,}` keeps a backtracking point per repeated byte, about 100 bytes
    each, so an 11 MiB run cost the harness 1.1 GB. Any run of MIN_RUN bytes covers a whole block
    of MIN_RUN // 2 + 1 bytes starting at a multiple of MIN_RUN // 2: only those blocks are
    looked at (a C-speed comparison each), and a block of one byte is then grown both ways."""
    step = MIN_RUN // 2
    out: list[tuple[int, int]] = []
    done = 0  # everything before this is already inside a found run or ruled out
    for k in range(0, len(raw) - step, step):
        if k < done or raw[k] != raw[k + step]:
            continue
        one = raw[k:k + 1]
        if raw[k:k + step + 1] != one * (step + 1):
            continue
        before = raw[max(done, k - step):k]  # a run reaching further back would have shown in the block before
        start = k - (len(before) - len(before.rstrip(one)))
        other = re.compile(b"[^" + re.escape(one) + b"]").search(raw, k + step + 1)
        end = other.start() if other else len(raw)
        if end - start >= MIN_RUN:
            out.append((start, end))
        done = end
    return out


def recipe_for(raw: bytes) -> dict[str, Any] | None:
    """The recipe of `raw`, or None when it is short or not mostly runs (then keep it whole)."""
    if len(raw) <= RECIPE_OVER:
        return None
    found = runs(raw)
    literal = len(raw) - sum(end - start for start, end in found)
    if literal > RECIPE_OVER:
        return None
    pieces: list[list[Any]] = []
    at = 0
    for start, end in found:
        if start > at:
            pieces.append(["lit", _text(raw[at:start])])
        pieces.append(["run", _text(raw[start:start + 1]), end - start])
        at = end
    if at < len(raw):
        pieces.append(["lit", _text(raw[at:])])
    return {"length": len(raw), "sha256": hashlib.sha256(raw).hexdigest(),
            "prefix": raw[:PREFIX_CHARS].decode("utf-8", "replace"), "pieces": pieces}


def make(recipe: Any) -> bytes:
    """The exact bytes a recipe stands for; ValueError when it is malformed or they do not match."""
    if not isinstance(recipe, dict) or not isinstance(recipe.get("pieces"), list):
        raise ValueError("a frame recipe needs a list of pieces")
    length, digest = recipe.get("length"), recipe.get("sha256")
    if not isinstance(length, int) or isinstance(length, bool) or not 0 <= length <= MAX_MADE:
        raise ValueError(f"a frame recipe needs its length, at most {MAX_MADE} bytes")
    total = 0
    for piece in recipe["pieces"]:
        if isinstance(piece, list) and len(piece) == 2 and piece[0] == "lit" and isinstance(piece[1], str):
            total += len(piece[1])
        elif (isinstance(piece, list) and len(piece) == 3 and piece[0] == "run" and isinstance(piece[1], str)
              and len(piece[1]) == 1 and isinstance(piece[2], int) and not isinstance(piece[2], bool)
              and piece[2] > 0):
            total += piece[2]
        else:
            raise ValueError(f"bad piece in a frame recipe: {str(piece)[:80]}")
    if total != length:  # checked before anything is allocated: a file cannot make us build more
        raise ValueError(f"a frame recipe makes {total} bytes, not the {length} it says")
    out = bytearray()
    for piece in recipe["pieces"]:
        try:
            out += piece[1].encode("latin-1") * (piece[2] if piece[0] == "run" else 1)
        except UnicodeEncodeError:
            raise ValueError("a frame recipe piece is not bytes written as latin-1") from None
    raw = bytes(out)
    if hashlib.sha256(raw).hexdigest() != digest:
        raise ValueError("the bytes a frame recipe makes do not match its sha256")
    return raw


def _parses_to(raw: bytes, parsed: Any) -> bool:
    try:
        return parsed is not None and orjson.loads(raw) == parsed
    except orjson.JSONDecodeError:
        return False


def dump_bytes(raw: bytes | None, parsed: Any, parsed_key: str) -> dict[str, Any] | None:
    """JSON fields for a frame's bytes and its parsed form when they are worth a recipe:
    `raw_made`, and the parsed form only where it is not what the bytes parse to (then the
    reader parses them again). None: write them as usual."""
    if raw is None:
        if parsed is None:
            return None
        made = recipe_for(orjson.dumps(parsed))
        return None if made is None else {f"{parsed_key}_made": made}
    made = recipe_for(raw)
    if made is None:
        return None
    out: dict[str, Any] = {"raw_made": made}
    if parsed is not None and not _parses_to(raw, parsed):
        out[parsed_key] = parsed
    return out


def load_bytes(data: Any, parsed_key: str) -> tuple[bytes | None, Any] | None:
    """The (raw, parsed) pair `dump_bytes` wrote, or None when `data` holds no recipe."""
    if f"{parsed_key}_made" in data:
        return None, orjson.loads(make(data[f"{parsed_key}_made"]))
    if "raw_made" not in data:
        return None
    raw = make(data["raw_made"])
    if parsed_key in data:
        return raw, data[parsed_key]
    try:
        return raw, orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw, None


def describe(recipe: dict[str, Any]) -> str:
    """One line for reports: length, digest and how the frame begins."""
    return (f"<{recipe.get('length')} bytes, sha256 {str(recipe.get('sha256'))[:16]}..., "
            f"begins {str(recipe.get('prefix', ''))[:80]!r}>")

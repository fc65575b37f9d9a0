"""Reading files the harness is handed (repro files, maybe compressed) with a size limit.

Why: a 2 MB `.json.gz` inflated to 4.1 GB before it was refused. Inflation here stops as soon
as the output passes the cap, so a hostile file costs at most the cap, and the error says so.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Final

MAX_FILE_BYTES: Final = 128 * 1024 * 1024
_STEP: Final = 1024 * 1024


class TooLarge(ValueError):
    """The file, or what it inflates to, is over the cap; the message is one line for the user."""


def inflate_bounded(data: bytes, cap: int = MAX_FILE_BYTES, *, name: str = "the file") -> bytes:
    """gzip `data` inflated, refusing (TooLarge) once more than `cap` bytes come out.
    Raises EOFError when the stream is truncated and OSError (zlib.error) when it is not gzip."""
    inflater = zlib.decompressobj(wbits=31)  # gzip header and trailer
    out = bytearray()
    view = memoryview(data)
    pos = 0
    while True:
        chunk = inflater.decompress(view[pos : pos + _STEP], max(cap + 1 - len(out), 1))
        out += chunk
        if len(out) > cap:
            raise TooLarge(f"{name} inflates to more than {cap // 2**20} MiB; refused")
        if inflater.eof:
            return bytes(out)
        if inflater.unconsumed_tail:
            view, pos = memoryview(inflater.unconsumed_tail), 0
            continue
        pos += _STEP
        if pos >= len(data):
            raise EOFError(f"{name} is a truncated gzip file")


def read_bounded(path: Path, cap: int = MAX_FILE_BYTES) -> bytes:
    """The file's bytes (inflated when its name ends in .gz), at most `cap` of either."""
    with path.open("rb") as fh:
        raw = fh.read(cap + 1)
    if len(raw) > cap:
        raise TooLarge(f"{path} is larger than {cap // 2**20} MiB; refused")
    if path.name.endswith(".gz"):
        try:
            return inflate_bounded(raw, cap, name=str(path))
        except zlib.error as exc:
            raise OSError(f"not a gzip file ({exc})") from None
    return raw

"""The transports, as objects: what differs between stdio and Streamable HTTP, said once.

Code asks a transport what it does (`transport.pairs_by_request`, `transport.line_framed`,
`transport.http_semantics`) instead of comparing its name, so a third transport is one entry
here (and its driver) rather than a comparison to find in every module.

A `Transport` is a `str` whose value is its name ("stdio", "http"): transcripts, repro files,
findings and `--transports` keep writing and reading those names unchanged, and orjson writes a
transport as its name. `transport_named` turns a name read from a file back into the object.
"""

from __future__ import annotations

from typing import Any, Final


class Transport(str):
    """One transport; equal to (and hashed as) its name."""

    #: Frames are newline-terminated lines on one byte stream per process (stdio): a line can
    #: be blank, split or unterminated, and stdout can carry noise between frames.
    line_framed: bool
    #: Each request is its own exchange whose answer comes back on it (an HTTP POST): an answer
    #: is paired with its request by the exchange (`ref`), not by matching ids on a stream.
    pairs_by_request: bool
    #: Answers carry an HTTP status and headers, requests carry headers and an HTTP method.
    http_semantics: bool

    def __new__(cls, name: str, *, line_framed: bool, pairs_by_request: bool, http_semantics: bool) -> Transport:
        self = super().__new__(cls, name)
        self.line_framed = line_framed
        self.pairs_by_request = pairs_by_request
        self.http_semantics = http_semantics
        return self

    @property
    def name(self) -> str:
        return str.__str__(self)

    def __reduce__(self) -> tuple[Any, ...]:  # pickled (worker processes) as its name: one object per name
        return (transport_named, (self.name,))

    def __repr__(self) -> str:
        return f"Transport({self.name!r})"


STDIO: Final = Transport("stdio", line_framed=True, pairs_by_request=False, http_semantics=False)
HTTP: Final = Transport("http", line_framed=False, pairs_by_request=True, http_semantics=True)

TRANSPORTS: Final[dict[str, Transport]] = {t.name: t for t in (STDIO, HTTP)}


def transport_named(name: str) -> Transport:
    """The transport a name (from a file, a flag, an older caller) stands for; ValueError if none."""
    if isinstance(name, Transport):
        return name
    try:
        return TRANSPORTS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown transport {name!r} (known: {', '.join(TRANSPORTS)})") from None

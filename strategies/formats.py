"""String strategies for the JSON Schema `format` values MCP schemas and tool schemas use.

Why a module of its own: under 2020-12 `format` is only an annotation, so a validator accepts
any string; but a server treats `uri` fields as URIs, so a frame full of random text in
`resources/read.uri` only ever exercises the "not found" path. Generating plausible values
keeps valid frames meaningful. Every strategy here shrinks toward a short, readable value.
"""

from __future__ import annotations

import base64
import datetime as _dt
import string

from hypothesis import strategies as st

# Letters first so that shrinking lands on "a", not on a digit or a symbol.
IDENT_ALPHABET = string.ascii_lowercase + string.digits + string.ascii_uppercase + "_-"
_SEGMENT_ALPHABET = string.ascii_lowercase + string.digits + "-._~"

_segment = st.text(alphabet=_SEGMENT_ALPHABET, min_size=1, max_size=8).filter(lambda s: s not in (".", ".."))
_host = st.sampled_from(["example.com", "localhost", "example.org", "127.0.0.1"])


def identifier(min_size: int = 1, max_size: int = 10) -> st.SearchStrategy[str]:
    """A readable ASCII identifier (`a`, `b3`, `x_y`), used for map keys and names."""
    return st.text(alphabet=IDENT_ALPHABET, min_size=min_size, max_size=max_size)


def _clean_path(raw: str) -> str:
    parts = [seg for seg in raw.split("/") if seg not in ("", ".", "..")]
    return "/".join(parts) or "a"


# One string choice per path (not a list of segments): cheaper to draw, same shapes.
_path = st.text(alphabet=_SEGMENT_ALPHABET + "/", min_size=1, max_size=16).map(_clean_path)


def uri() -> st.SearchStrategy[str]:
    """An absolute RFC 3986 URI from a few common schemes; shrinks to `file:///a`."""
    path = _path
    file_uri = path.map(lambda p: "file:///" + p)
    http_uri = st.tuples(st.sampled_from(["https", "http"]), _host, path).map(
        lambda t: f"{t[0]}://{t[1]}/{t[2]}"
    )
    custom = st.tuples(st.sampled_from(["test", "mem", "db"]), path).map(lambda t: f"{t[0]}://{t[1]}")
    urn = st.tuples(identifier(1, 6), _segment).map(lambda t: f"urn:{t[0]}:{t[1]}")
    return st.one_of(file_uri, http_uri, custom, urn)


def uri_template() -> st.SearchStrategy[str]:
    """An RFC 6570 level-1 template such as `file:///{name}`."""
    var = identifier(1, 6).map(lambda v: "{" + v + "}")
    return st.tuples(uri(), var).map(lambda t: t[0].rstrip("/") + "/" + t[1])


def base64_bytes() -> st.SearchStrategy[str]:
    """Standard base64 (with padding) of random bytes: the schema's `byte` format."""
    return st.binary(max_size=24).map(lambda b: base64.b64encode(b).decode("ascii"))


def email() -> st.SearchStrategy[str]:
    return st.tuples(identifier(1, 8), st.sampled_from(["example.com", "example.org"])).map(
        lambda t: f"{t[0]}@{t[1]}"
    )


def date() -> st.SearchStrategy[str]:
    return st.dates(min_value=_dt.date(1970, 1, 1), max_value=_dt.date(2099, 12, 31)).map(
        lambda d: d.isoformat()
    )


def date_time() -> st.SearchStrategy[str]:
    return st.datetimes(
        min_value=_dt.datetime(1970, 1, 1), max_value=_dt.datetime(2099, 12, 31), timezones=st.just(_dt.UTC)
    ).map(lambda d: d.isoformat().replace("+00:00", "Z"))


def time() -> st.SearchStrategy[str]:
    return st.times().map(lambda t: t.replace(microsecond=0).isoformat() + "Z")


def hostname() -> st.SearchStrategy[str]:
    label = st.text(alphabet=string.ascii_lowercase + string.digits, min_size=1, max_size=8)
    return st.lists(label, min_size=1, max_size=3).map(".".join)


_FORMATS = {
    "uri": uri,
    "iri": uri,
    "uri-reference": uri,
    "iri-reference": uri,
    "url": uri,
    "uri-template": uri_template,
    "byte": base64_bytes,
    "email": email,
    "idn-email": email,
    "date": date,
    "date-time": date_time,
    "time": time,
    "hostname": hostname,
    "idn-hostname": hostname,
    "uuid": lambda: st.uuids().map(str),
    "ipv4": lambda: st.ip_addresses(v=4).map(str),
    "ipv6": lambda: st.ip_addresses(v=6).map(str),
}


def format_strategy(name: str) -> st.SearchStrategy[str] | None:
    """The strategy for a `format` value, or None when the format is unknown (then any string fits)."""
    factory = _FORMATS.get(name)
    return factory() if factory else None


def known_formats() -> list[str]:
    return sorted(_FORMATS)

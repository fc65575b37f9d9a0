"""`--header 'NAME: VALUE'`: headers every HTTP request to the target carries (auth, tenancy).

Why this shape: a server behind authentication needs e.g. `Authorization: Bearer <token>`, and
the token must stay out of command lines, reports and repro files. So a value may name
environment variables (`Bearer ${TOKEN}`), expanded only when a request is sent; what the
transcript records (and so every report and repro file) is the template, never the value. A
literal value of a credential header (Authorization, Cookie, ...) is recorded as `<redacted>`.

The headers travel to worker processes and replays in one environment variable
(`HEADERS_ENV`, a JSON list of templates), so no driver signature changes.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Iterable, Mapping

import orjson

HEADERS_ENV = "MCP_TEMPEST_HTTP_HEADER_TEMPLATES"
SENSITIVE = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key"})
REDACTED = "<redacted>"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an RFC 9110 token


OPTION_HELP = ("send this header on every HTTP request (repeatable); the value may name environment "
               "variables, e.g. 'Authorization: Bearer ${TOKEN}', expanded at send time and never "
               "written to reports, repro files or any other output")


def add_option(parser: argparse.ArgumentParser) -> None:
    """The one `--header` option of every command that talks HTTP (fuzz, replay, probe, load)."""
    parser.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'", help=OPTION_HELP)


class HeaderError(ValueError):
    """A `--header` that cannot be used; the message is one line."""


_BREAKS = re.compile(r"[\r\n\0]")
_EXAMPLE = "expected 'NAME: VALUE', e.g. 'Authorization: Bearer ${TOKEN}'"


def parse_header(text: str) -> tuple[str, str]:
    """(name, template). Errors name the header, never its value (it may be the secret itself)."""
    name, sep, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not sep:
        raise HeaderError(f"--header: {_EXAMPLE} (the text given is not shown: it may hold a secret)")
    if not _NAME.match(name):
        shown_name = name if len(name) <= 40 and not _BREAKS.search(name) else name[:40].splitlines()[0] + "..."
        raise HeaderError(f"--header {shown_name!r}: not a header name; {_EXAMPLE}")
    if name.lower() in ("host", "content-length", "content-type"):
        raise HeaderError(f"--header {name}: the harness sets this header itself")
    if _BREAKS.search(value):
        raise HeaderError(f"--header {name}: the value holds a CR, LF or NUL, which would split the request")
    return name, value


def _checked(name: str, value: str, env: Mapping[str, str]) -> str:
    """`value` with its variables expanded from `env`; HeaderError (naming the header and the
    variable, never what it holds) when an expansion would put a line break on the wire."""
    def one(m: re.Match[str]) -> str:
        got = env.get(m.group(1), "")
        if _BREAKS.search(got):
            raise HeaderError(f"--header {name}: environment variable {m.group(1)} holds a CR, LF or NUL, "
                              "which would split the request")
        return got

    return _VAR.sub(one, value)


def configure(texts: Iterable[str], environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """Check each `--header` (syntax, every ${VAR} set) and hand them to the drivers of this process tree."""
    env = os.environ if environ is None else environ
    headers = [parse_header(t) for t in texts]
    for name, value in headers:
        missing = [v for v in _VAR.findall(value) if v not in env]
        if missing:
            raise HeaderError(f"--header {name}: environment variable {missing[0]} is not set")
        _checked(name, value, env)
    os.environ[HEADERS_ENV] = orjson.dumps(headers).decode()
    return headers


def templates() -> list[tuple[str, str]]:
    """The configured (name, template) pairs; a hot sender (a load user) reads them once and passes
    them to `expanded`/`shown`, which otherwise read them from the environment on every call."""
    raw = os.environ.get(HEADERS_ENV)
    return [(str(n), str(v)) for n, v in orjson.loads(raw)] if raw else []


def expanded(given: list[tuple[str, str]] | None = None) -> dict[str, str]:
    """The configured headers with their variables' current values: what goes on the wire."""
    pairs = templates() if given is None else given
    return {name: _checked(name, value, os.environ) for name, value in pairs}


def shown(given: list[tuple[str, str]] | None = None) -> dict[str, str]:
    """The same headers as the transcript records them: templates, and no literal credential."""
    pairs = templates() if given is None else given
    return {name: value if _VAR.search(value) or name.lower() not in SENSITIVE else REDACTED
            for name, value in pairs}

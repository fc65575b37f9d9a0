"""What the drivers of a process tree do with a request's token case under `--auth`.

Kept apart from the authorization server (targets/auth_server.py) so that a driver never imports
the JOSE library: it only asks the issuer named in the environment for a minted token, over
loopback HTTP, which is also how worker processes and replays reach the one campaign issuer.
"""

from __future__ import annotations

import os
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Final

import orjson

from mcp_tempest.strategies.auth_tokens import (
    AUTH_DIRECTIVE,
    ISSUER_ENV,
    ISSUER_HEADER,
    ISSUER_PLACEHOLDER,
    METADATA_AT,
    RESOURCE_HEADER,
    TOKEN_CASES,
    metadata_url,
    placeholders,
    substitute,
)

METADATA_PATH: Final = "/.well-known/oauth-authorization-server"


class AuthServerError(RuntimeError):
    """The authorization server cannot be used (not loopback, not reachable); one line."""


def loopback_url(url: str, what: str) -> str:
    """`url` when it is an http URL on 127.0.0.1 / ::1 / localhost; AuthServerError otherwise."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "::1", "localhost"):
        raise AuthServerError(f"{what} {url!r}: expected http://127.0.0.1:PORT (loopback only)")
    return url.rstrip("/")


def use_issuer(issuer: str) -> str:
    """Point this process tree's drivers at `issuer` (checked: loopback, its metadata answers)."""
    issuer = loopback_url(issuer, "--auth-issuer")
    try:
        with urllib.request.urlopen(issuer + METADATA_PATH, timeout=5) as resp:  # noqa: S310 - loopback checked
            meta = orjson.loads(resp.read())
    except (OSError, ValueError) as exc:
        raise AuthServerError(f"--auth-issuer {issuer}: no authorization server metadata there ({exc})") from exc
    if not isinstance(meta, dict) or meta.get("issuer") != issuer:
        raise AuthServerError(f"--auth-issuer {issuer}: its metadata names issuer {meta.get('issuer')!r}")
    os.environ[ISSUER_ENV] = issuer
    return issuer


def active_issuer() -> str | None:
    return os.environ.get(ISSUER_ENV) or None


def with_issuer(argv: list[str]) -> list[str]:
    """An `http+spawn:` command with `{issuer}` replaced by this process tree's issuer URL."""
    if not any(ISSUER_PLACEHOLDER in a for a in argv):
        return argv
    issuer = active_issuer()
    if issuer is None:
        raise AuthServerError("the target command names {issuer}, but no authorization server runs (add --auth)")
    return [a.replace(ISSUER_PLACEHOLDER, issuer) for a in argv]


_CACHE_S: Final = 30.0
_cache: dict[tuple[str, str, str], tuple[float, str]] = {}
_cache_lock = threading.Lock()


def token(issuer: str, case: str, resource: str) -> str:
    """A token of `case` for `resource`, minted by `issuer` (cached for a few seconds)."""
    key = (issuer, case, resource)
    now = time.monotonic()
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and now - hit[0] < _CACHE_S:
            return hit[1]
    query = urllib.parse.urlencode({"case": case, "resource": resource})
    with urllib.request.urlopen(f"{issuer}/test-token?{query}", timeout=5) as resp:  # noqa: S310 - loopback
        minted = str(orjson.loads(resp.read())["token"])
    with _cache_lock:
        _cache[key] = (now, minted)
    return minted


@dataclass(frozen=True, slots=True)
class Applied:
    """A request's token case carried out: the wire headers, the recorded ones (directive and
    placeholder, never a token), a query to append ("" or `name=value`, recorded and sent), and
    a path to use instead of the endpoint's (a metadata fetch)."""

    wire: dict[str, str]
    recorded: dict[str, str]
    shown_query: str = ""
    sent_query: str = ""
    path: str | None = None


def apply_auth(headers: dict[str, str], resource: str) -> Applied:
    """Carry out a request's token case for the endpoint `resource`.

    Without an active issuer and without a directive nothing changes. With one, a request that
    names no case gets `valid`."""
    name_of = {k.lower(): k for k in headers}
    directive = name_of.get(AUTH_DIRECTIVE.lower())
    issuer = active_issuer()
    if directive is None and issuer is None:
        return Applied(headers, headers)
    wire = dict(headers)
    case_name = wire.pop(directive).strip() if directive is not None else "valid"
    for k in [k for k in wire if k.lower() == "authorization"]:
        del wire[k]
    if case_name in METADATA_AT:
        url = metadata_url(resource, with_path=METADATA_AT[case_name])
        recorded = wire | {AUTH_DIRECTIVE: case_name, RESOURCE_HEADER: resource, ISSUER_HEADER: issuer or ""}
        return Applied(wire, recorded, path="/" + url.partition("://")[2].partition("/")[2])
    case = TOKEN_CASES.get(case_name)
    if case is None:
        raise AuthServerError(f"unknown token case {case_name!r}")
    recorded = dict(wire)
    recorded[AUTH_DIRECTIVE] = case.name
    value, query = case.authorization(), case.query() or ""
    if value is not None:
        recorded["Authorization"] = value
        wire["Authorization"] = value
    sent_query = query
    if placeholders(value or "") or placeholders(query):
        if issuer is None:
            raise AuthServerError(f"token case {case.name!r} needs an authorization server (add --auth)")
        minted = {case.name: token(issuer, case.name, resource)}
        if value is not None:
            wire["Authorization"] = substitute(value, minted)
        sent_query = substitute(query, minted)
    return Applied(wire, recorded, query, sent_query)


def directive(case: str) -> dict[str, str]:
    """The header a step carries to be sent with token case `case` (or a metadata fetch)."""
    if case not in TOKEN_CASES and case not in METADATA_AT:
        raise ValueError(f"unknown token case {case!r}")
    return {AUTH_DIRECTIVE: case}



AUTH_HELP = ("act as the target's OAuth authorization server: start one on 127.0.0.1 (its URL is printed and "
             "replaces {issuer} in an http+spawn: command), send every request with a valid token it minted, "
             "and, in fuzz, probe the target's token checks (the auth property, AUTH-* rules)")
ISSUER_HELP = ("with --auth: use the authorization server already running at this loopback URL "
               "(`mcp-tempest auth-server`) instead of starting one")


def add_options(parser: Any) -> None:
    """The `--auth` and `--auth-issuer` options of every command that talks HTTP."""
    parser.add_argument("--auth", action="store_true", help=AUTH_HELP)
    parser.add_argument("--auth-issuer", metavar="URL", default=None, help=ISSUER_HELP)


class Session:
    """The authorization server of one command run (ours, or one already running), until close()."""

    def __init__(self, server: Any, issuer: str) -> None:
        self.server, self.issuer = server, issuer

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
        if os.environ.get(ISSUER_ENV) == self.issuer:
            del os.environ[ISSUER_ENV]


def start(auth: bool, issuer: str | None, *, announce: Any = None) -> Session | None:
    """Start (or adopt) the authorization server `--auth` asks for; None without --auth.
    Raises AuthServerError with a one-line message."""
    if issuer is not None and not auth:
        raise AuthServerError("--auth-issuer needs --auth")
    if not auth:
        return None
    if issuer is not None:
        return Session(None, use_issuer(issuer))
    from mcp_tempest.targets.auth_server import AuthServer  # the JOSE library, only now

    server = AuthServer()
    use_issuer(server.issuer)
    if announce is not None:
        announce(f"authorization server: {server.issuer} (keys generated for this run, in memory only)")
    return Session(server, server.issuer)


def needs_issuer(texts: list[str]) -> bool:
    """Whether a target command names {issuer}, or a recorded case names a token case."""
    return any(ISSUER_PLACEHOLDER in t or AUTH_DIRECTIVE in t for t in texts)

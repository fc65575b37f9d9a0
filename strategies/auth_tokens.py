"""The tokens `fuzz --auth` presents to a protected server, each with the reaction it must get.

Why a table of named cases rather than random JWTs: a resource server's token validation has a
small number of distinct checks (audience, expiry, not-before, issuer, signature, algorithm,
key id, scope, where the token travels), and each is a bug class of its own. Every case names
the AUTH rule it probes (fuzz/oracle/auth.py) and the HTTP statuses a correct server may answer.

A case travels as a directive, the reserved request header `Mcp-Tempest-Auth: NAME`, which the
driver strips from the wire and carries out (targets/auth_server.py): it asks the harness's
authorization server for a freshly minted token of that kind at send time and puts it where the
case says. The transcript records the directive and a `{auth:NAME}` placeholder where the token
went, never a token, so the reports and a replay file name the case, and a replay months later
mints tokens that are as valid (or as expired) as the originals were. With `--auth` every request
without a directive gets `valid`, so the other properties run unchanged against a protected server.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

Placement = Literal["header", "query", "none", "raw"]

#: The scope a valid token carries and the reference server requires (advertised by both the
#: authorization server's and the resource's metadata as scopes_supported).
SCOPE: Final = "mcp"
#: Where a resource server publishes its protected resource metadata (RFC 9728 section 3).
PRM_PATH: Final = "/.well-known/oauth-protected-resource"
#: The reserved request header naming a request's token case (stripped from the wire).
AUTH_DIRECTIVE: Final = "Mcp-Tempest-Auth"
#: Environment variable naming the authorization server of this process tree (set by --auth).
ISSUER_ENV: Final = "TEMPEST_AUTH_ISSUER"  # not MCP_TEMPEST_*: those are options (fuzz/config.py)
#: The `http+spawn:` command placeholder replaced by that URL.
ISSUER_PLACEHOLDER: Final = "{issuer}"

_PLACEHOLDER: Final = re.compile(r"\{auth:([a-z0-9-]+)\}")


@dataclass(frozen=True, slots=True)
class TokenCase:
    """One kind of credential. `statuses`: what a correct server answers (empty: it serves the
    request); `placement`: how it travels ("raw": `header` is the Authorization value as is)."""

    name: str
    rule: str
    statuses: frozenset[int]
    placement: Placement
    description: str
    header: str = ""

    @property
    def served(self) -> bool:
        return not self.statuses

    def authorization(self) -> str | None:
        """The Authorization header value the request carries (None: no such header)."""
        if self.placement == "header":
            return f"Bearer {placeholder(self.name)}"
        if self.placement == "raw":
            return self.header
        return None

    def query(self) -> str | None:
        return f"access_token={placeholder(self.name)}" if self.placement == "query" else None


_401: Final = frozenset({401})
_CASES: Final[tuple[TokenCase, ...]] = (
    TokenCase("valid", "AUTH-01", frozenset(), "header", "a token the server's own issuer minted for it, in scope"),
    TokenCase("none", "AUTH-02", _401, "none", "no Authorization header at all"),
    TokenCase("malformed-scheme", "AUTH-08", frozenset({400, 401}), "raw",
              "an Authorization header of another scheme (Basic)", header="Basic bWNwOmdhdW50bGV0"),
    TokenCase("malformed-empty", "AUTH-08", frozenset({400, 401}), "raw",
              "`Bearer` with no token after it", header="Bearer "),
    TokenCase("malformed-not-jwt", "AUTH-08", frozenset({400, 401}), "raw",
              "a bearer value that is no token the issuer could have minted", header="Bearer not.a-token"),
    TokenCase("wrong-audience", "AUTH-03", _401, "header",
              "a valid token issued for another resource (aud names another server)"),
    TokenCase("expired", "AUTH-04", _401, "header", "a token whose exp passed an hour ago"),
    TokenCase("not-yet-valid", "AUTH-05", _401, "header", "a token whose nbf is an hour from now"),
    TokenCase("wrong-issuer", "AUTH-06", _401, "header",
              "a token naming another issuer (signed with the issuer's own key)"),
    TokenCase("bad-signature", "AUTH-07", _401, "header", "a valid token whose signature was altered"),
    TokenCase("alg-none", "AUTH-07", _401, "header", "an unsigned token (alg: none)"),
    TokenCase("unknown-kid", "AUTH-07", _401, "header",
              "a token signed by a key the issuer's JWKS does not publish"),
    TokenCase("missing-scope", "AUTH-09", frozenset({403}), "header", "a valid token with no scope claim"),
    TokenCase("insufficient-scope", "AUTH-09", frozenset({403}), "header",
              "a valid token whose scope names only an unrelated scope"),
    TokenCase("query-string", "AUTH-10", _401, "query",
              "a valid token in the URL's access_token query parameter, no Authorization header"),
)

TOKEN_CASES: Final[dict[str, TokenCase]] = {c.name: c for c in _CASES}
#: The cases that are minted by the authorization server (the others are literal headers).
MINTED: Final = frozenset(c.name for c in _CASES if c.placement in ("header", "query"))


#: Directives that fetch the protected resource metadata instead of sending a token (a GET of the
#: RFC 9728 well-known URI: the endpoint's path appended, section 3.1, or the host's root, which
#: MCP clients try next). The recorded request names the endpoint and the issuer they are judged by.
METADATA_AT: Final[dict[str, bool]] = {"metadata-path": True, "metadata-root": False}
RESOURCE_HEADER: Final = "Mcp-Tempest-Resource"
ISSUER_HEADER: Final = "Mcp-Tempest-Issuer"


def metadata_url(resource: str, *, with_path: bool) -> str:
    """Where `resource` publishes its metadata (RFC 9728 section 3.1: inserted before the path)."""
    scheme, _, rest = resource.partition("://")
    host, slash, path = rest.partition("/")
    suffix = f"/{path.split('?', 1)[0]}".rstrip("/") if with_path and slash else ""
    return f"{scheme}://{host}{PRM_PATH}{suffix}"


def placeholder(name: str) -> str:
    return f"{{auth:{name}}}"


def placeholders(text: str) -> list[str]:
    return _PLACEHOLDER.findall(text)


def substitute(text: str, token_of: dict[str, str]) -> str:
    """`text` with every placeholder replaced by its minted token."""
    return _PLACEHOLDER.sub(lambda m: token_of[m.group(1)], text)


def case_of_headers(headers: dict[str, str] | None) -> TokenCase | None:
    """The token case of a recorded request (its directive), None when auth was not in play."""
    if not headers:
        return None
    name = next((v for k, v in headers.items() if k.lower() == AUTH_DIRECTIVE.lower()), None)
    return TOKEN_CASES.get(name.strip()) if name is not None else None

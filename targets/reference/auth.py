"""`serve --transport http --auth-issuer URL`: the reference server as an OAuth 2.1 resource server.

What a correct MCP resource server checks (MCP authorization page; RFC 6750, 8707, 9068, 9728):
a Bearer token in the Authorization header only (never the query string), signed by a key in the
issuer's JWKS with the algorithm we expect (so `alg: none` and unknown keys fail), issued by that
issuer, for this very resource (aud is our canonical URL), within exp/nbf, carrying the scope we
require (else 403 insufficient_scope). Every refusal carries WWW-Authenticate naming the protected
resource metadata (RFC 9728), which is served unauthenticated. The auth mutants switch one of these
checks off (targets/mutants). Verification is joserfc's.
"""

from __future__ import annotations

import base64
import urllib.request
from dataclasses import dataclass
from typing import Any, Final

import orjson
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from mcp_tempest.strategies.auth_tokens import PRM_PATH, SCOPE
from mcp_tempest.targets.auth_client import METADATA_PATH, loopback_url

ALGORITHMS: Final = ["RS256"]


@dataclass(frozen=True, slots=True)
class Refusal:
    status: int
    www_authenticate: str | None
    body: bytes


def _fetch(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as resp:  # noqa: S310 - loopback checked by the caller
        return orjson.loads(resp.read())


class ResourceGuard:
    """The token check of one server instance at `resource` (its canonical URL)."""

    def __init__(self, issuer: str, bugs: frozenset[str] = frozenset()) -> None:
        self.issuer = loopback_url(issuer, "--auth-issuer")
        meta = _fetch(self.issuer + METADATA_PATH)
        self.keys = KeySet.import_key_set(_fetch(meta["jwks_uri"]))
        self.bugs = bugs
        self.resource = ""

    def bind(self, resource: str) -> None:
        self.resource = resource

    @property
    def metadata_url(self) -> str:
        base, _, path = self.resource.partition("//")[2].partition("/")
        return f"http://{base}{PRM_PATH}/{path}"

    def metadata(self) -> dict[str, Any]:
        """The protected resource metadata (RFC 9728 section 2)."""
        resource = self.resource
        if "auth-metadata-origin-resource" in self.bugs:  # the mutant: the origin, not the endpoint
            resource = resource.rsplit("/", 1)[0]
        return {"resource": resource, "authorization_servers": [self.issuer],
                "scopes_supported": [SCOPE], "bearer_methods_supported": ["header"]}

    def _refuse(self, status: int, error: str, description: str) -> Refusal:
        if "auth-no-www-authenticate" in self.bugs:  # the mutant (targets/mutants)
            header = None
        else:
            params = [f'error="{error}"', f'error_description="{description}"'] if error else []
            if status == 403:
                params.append(f'scope="{SCOPE}"')
            params.append(f'resource_metadata="{self.metadata_url}"')
            header = "Bearer " + ", ".join(params)
        body = orjson.dumps({"error": error or "invalid_token", "error_description": description})
        return Refusal(status, header, body)

    def check(self, authorization: str | None) -> Refusal | None:
        """None when the request may be served; otherwise how to refuse it."""
        if authorization is None:
            return self._refuse(401, "", "authorization required")
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return self._refuse(401, "invalid_request", "expected a Bearer token")
        claims = self._claims(token)
        if claims is None:
            return self._refuse(401, "invalid_token", "the token does not verify")
        wanted: dict[str, Any] = {"iss": {"essential": True, "value": self.issuer}}
        if "auth-audience-unchecked" not in self.bugs:
            wanted["aud"] = {"essential": True, "value": self.resource}
        if "auth-expiry-unchecked" in self.bugs:  # the mutant: exp is never looked at
            claims = {k: v for k, v in claims.items() if k != "exp"}
        else:
            wanted["exp"] = {"essential": True}
        try:
            jwt.JWTClaimsRegistry(leeway=5, **wanted).validate(claims)
        except JoseError as exc:
            return self._refuse(401, "invalid_token", f"claim check failed: {exc.error}")
        except (TypeError, ValueError):
            return self._refuse(401, "invalid_token", "malformed claims")
        scopes = claims.get("scope")
        if not isinstance(scopes, str) or SCOPE not in scopes.split():
            return self._refuse(403, "insufficient_scope", f"the scope {SCOPE} is required")
        return None

    def _claims(self, token: str) -> dict[str, Any] | None:
        if "auth-signature-unchecked" in self.bugs:  # the mutant: reads the claims, trusts them
            try:
                body = token.split(".")[1]
                claims = orjson.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            except (IndexError, ValueError):
                return None
            return claims if isinstance(claims, dict) else None
        try:
            verified = jwt.decode(token, self.keys, algorithms=ALGORITHMS)
        except (JoseError, ValueError, TypeError):
            return None
        return dict(verified.claims)

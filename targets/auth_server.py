"""The harness's own loopback OAuth authorization server, and the client side that uses it.

Why the harness is its own authorization server: to ask "does this server accept a token issued
for someone else?" the fuzzer needs tokens a real issuer would mint (right key, right claims) next
to ones that differ in exactly one check. So `--auth` starts this server on 127.0.0.1 with a key
generated for the campaign, held in memory only (never written anywhere), publishes its metadata
(RFC 8414) and JWKS (RFC 7517), and mints the named token cases of `strategies.auth_tokens`.
A protected target is pointed at it by `{issuer}` in its `http+spawn:` command (or configured
with the URL printed for a running one); the target fetches the JWKS like from any issuer.

Signing and verifying are joserfc's (a maintained JOSE library); the only token we assemble by
hand is the unsigned `alg: none` one, which has no cryptography to get wrong.
"""

from __future__ import annotations

import base64
import secrets
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

import orjson
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from mcp_tempest.strategies.auth_tokens import MINTED, SCOPE

LIFETIME_S: Final = 3600
#: An audience and an issuer that are not this campaign's: loopback, port 1 (nothing listens).
OTHER_RESOURCE: Final = "http://127.0.0.1:1/another-resource"
OTHER_ISSUER: Final = "http://127.0.0.1:1/another-issuer"
ALG: Final = "RS256"


from mcp_tempest.targets.auth_client import METADATA_PATH, AuthServerError  # noqa: E402,F401 - one definition of each


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class AuthServer:
    """A running loopback authorization server (a daemon thread); `close()` stops it."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        if host not in ("127.0.0.1", "::1"):
            raise AuthServerError(f"the authorization server binds loopback only, not {host}")
        self._key = RSAKey.generate_key(2048, parameters={"kid": f"tempest-{secrets.token_hex(4)}", "use": "sig",
                                                          "alg": ALG})
        self._foreign = RSAKey.generate_key(2048, parameters={"kid": f"unpublished-{secrets.token_hex(4)}"})
        self.jwks = KeySet([self._key]).as_dict(private=False)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet: the harness prints its own lines
                pass

            def do_GET(self) -> None:
                url = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(url.query))
                if url.path == METADATA_PATH:
                    self._json(200, server.metadata())
                elif url.path == "/jwks":
                    self._json(200, server.jwks)
                elif url.path == "/test-token" and query.get("case") in MINTED and query.get("resource"):
                    self._json(200, {"token": server.mint(query["case"], query["resource"])})
                else:
                    self._json(404, {"error": "not_found"})

            def do_POST(self) -> None:  # RFC 6749 client credentials, for clients that ask the usual way
                length = min(int(self.headers.get("Content-Length") or 0), 65536)
                form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode("utf-8", "replace")))
                if self.path != "/token" or form.get("grant_type") != "client_credentials" or not form.get("resource"):
                    self._json(400, {"error": "invalid_request"})
                    return
                token = server.mint("valid", form["resource"], scope=form.get("scope") or SCOPE)
                self._json(200, {"access_token": token, "token_type": "Bearer", "expires_in": LIFETIME_S})

            def _json(self, status: int, body: Any) -> None:
                data = orjson.dumps(body)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        family_server = ThreadingHTTPServer
        if ":" in host:
            import socket

            class _V6(ThreadingHTTPServer):
                address_family = socket.AF_INET6

            family_server = _V6
        self._httpd = family_server((host, port), Handler)
        self._httpd.daemon_threads = True
        bound = self._httpd.server_address[1]
        self.issuer = f"http://{'[::1]' if ':' in host else host}:{bound}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="auth-server", daemon=True)
        self._thread.start()

    def metadata(self) -> dict[str, Any]:
        """RFC 8414 authorization server metadata."""
        return {
            "issuer": self.issuer,
            "jwks_uri": f"{self.issuer}/jwks",
            "token_endpoint": f"{self.issuer}/token",
            "grant_types_supported": ["client_credentials"],
            "response_types_supported": ["token"],
            "token_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": [SCOPE],
        }

    def mint(self, case: str, resource: str, *, scope: str = SCOPE) -> str:
        """A token of the named case for `resource` (the server's canonical URL, RFC 8707)."""
        now = int(time.time())
        claims: dict[str, Any] = {"iss": self.issuer, "sub": "mcp-tempest", "client_id": "mcp-tempest",
                                  "aud": resource, "iat": now, "exp": now + LIFETIME_S,
                                  "jti": secrets.token_hex(8), "scope": scope}
        key = self._key
        if case == "wrong-audience":
            claims["aud"] = OTHER_RESOURCE
        elif case == "expired":
            claims.update(iat=now - 2 * LIFETIME_S, exp=now - LIFETIME_S)
        elif case == "not-yet-valid":
            claims.update(nbf=now + LIFETIME_S, exp=now + 2 * LIFETIME_S)
        elif case == "wrong-issuer":
            claims["iss"] = OTHER_ISSUER
        elif case == "missing-scope":
            del claims["scope"]
        elif case == "insufficient-scope":
            claims["scope"] = "unrelated:read"
        elif case == "unknown-kid":
            key = self._foreign
        elif case == "alg-none":
            head = _b64(orjson.dumps({"alg": "none", "typ": "at+jwt"}))
            return f"{head}.{_b64(orjson.dumps(claims))}."
        elif case not in ("valid", "bad-signature", "query-string"):
            raise ValueError(f"unknown token case {case!r}")
        token = jwt.encode({"alg": ALG, "typ": "at+jwt", "kid": key.kid}, claims, key)
        if case == "bad-signature":
            head, body, sig = token.split(".")
            raw = bytearray(base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4)))
            raw[len(raw) // 2] ^= 0x01  # one bit in the middle: the same length, a wrong signature
            token = f"{head}.{body}.{_b64(bytes(raw))}"
        return token

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> AuthServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def auth_server_main(argv: list[str]) -> int:
    """`mcp-tempest auth-server`: run one until SIGINT/SIGTERM, for a server started by hand
    (`--auth-issuer URL` of the server, then `fuzz --auth --auth-issuer URL`)."""
    import argparse
    import signal
    import sys

    parser = argparse.ArgumentParser(prog="mcp-tempest auth-server",
                                     description="A loopback OAuth authorization server minting test tokens.")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        print("mcp-tempest auth-server: error: --port must be 0..65535", file=sys.stderr)
        return 2
    try:
        server = AuthServer(port=args.port)
    except OSError as exc:
        print(f"mcp-tempest auth-server: error: cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    print(f"authorization server: {server.issuer} (keys generated for this run, in memory only)", flush=True)
    stop.wait()
    server.close()
    return 0

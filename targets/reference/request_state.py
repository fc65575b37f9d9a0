"""requestState: the MRTR continuation, sealed so that any process of the store can trust it.

Format (ASCII, URL-safe): `rs1.<payload>.<mac>` where `payload` is base64url (no padding) of a
compact JSON object and `mac` is base64url of HMAC-SHA256(key, "rs1." + payload). The key is the
store's (`Store.state_key`), so a retry may land on any process (MRTR-18, SL-3).

The payload binds the state to the originating request (MRTR-14): `m` method, `n` tool/prompt
name or resource URI, `d` a digest of the arguments, `x` expiry (Unix ms), `j` a random nonce
(what single use spends), and `p` small tool-specific data. Verification order: shape, MAC,
expiry, binding; each failure raises StateError with a short reason the core turns into -32602
(MRTR-13, MRTR-15). Single use is enforced by the caller through the store's nonce table.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Any, Final

import orjson

PREFIX: Final = "rs1"
DEFAULT_TTL_S: Final = 600.0
MAX_TOKEN_CHARS: Final = 4096


class StateError(ValueError):
    """A requestState that must be refused; `reason` is safe to show to the client."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Claims:
    method: str
    name: str
    digest: str
    expires_ms: int
    nonce: str
    data: dict[str, Any]


def _b64e(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _b64d(text: str) -> bytes:
    if not text or any(c not in _B64_ALPHABET for c in text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


_B64_ALPHABET: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def args_digest(arguments: Any) -> str:
    """Digest of the salient params: key order does not matter, any value change does."""
    try:
        canonical = orjson.dumps(arguments if arguments is not None else {}, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        raise StateError("arguments too deeply nested") from None
    return _b64e(hashlib.sha256(canonical).digest()[:18])


class StateSealer:
    """Mints and verifies sealed requestState under one key."""

    def __init__(self, key: bytes, ttl_s: float = DEFAULT_TTL_S, *, check_mac: bool = True) -> None:
        self._key = key
        self._ttl_ms = int(ttl_s * 1000)
        # False only for the `unsigned-request-state` mutant (MRTR-13).
        self._check_mac = check_mac

    def _mac(self, signed: bytes) -> str:
        return _b64e(hmac.new(self._key, signed, hashlib.sha256).digest())

    def seal(self, method: str, name: str, arguments: Any, data: dict[str, Any] | None = None,
             *, now_ms: int | None = None) -> str:
        issued = int(time.time() * 1000) if now_ms is None else now_ms
        payload = {"m": method, "n": name, "d": args_digest(arguments), "x": issued + self._ttl_ms,
                   "j": secrets.token_hex(12), "p": data or {}}
        signed = PREFIX + "." + _b64e(orjson.dumps(payload))
        return signed + "." + self._mac(signed.encode("ascii"))

    def open(self, token: Any, method: str, name: str, arguments: Any,
             *, now_ms: int | None = None) -> Claims:
        """Verify and return the claims, or raise StateError (malformed/forged/expired/foreign)."""
        if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
            raise StateError("malformed requestState")
        parts = token.split(".")
        if self._check_mac:
            if len(parts) != 3 or parts[0] != PREFIX:
                raise StateError("malformed requestState")
            signed = (parts[0] + "." + parts[1]).encode("ascii", "replace")
            if not hmac.compare_digest(self._mac(signed).encode("ascii"), parts[2].encode("ascii", "replace")):
                raise StateError("requestState failed integrity check")
        elif len(parts) < 2:
            raise StateError("malformed requestState")
        try:
            payload = orjson.loads(_b64d(parts[1]))
            claims = Claims(str(payload["m"]), str(payload["n"]), str(payload["d"]), int(payload["x"]),
                            str(payload["j"]), dict(payload.get("p") or {}))
        except (ValueError, KeyError, TypeError):
            raise StateError("malformed requestState") from None
        current = int(time.time() * 1000) if now_ms is None else now_ms
        if claims.expires_ms < current:
            raise StateError("requestState expired")
        if claims.method != method or claims.name != name or claims.digest != args_digest(arguments):
            raise StateError("requestState belongs to a different request")
        return claims


class MemoryStateBook:
    """Mutant `memory-request-state` (MRTR-18, SL-3): the state is a key into this process's table."""

    def __init__(self, ttl_s: float = DEFAULT_TTL_S) -> None:
        self._ttl_ms = int(ttl_s * 1000)
        self._book: dict[str, Claims] = {}

    def seal(self, method: str, name: str, arguments: Any, data: dict[str, Any] | None = None,
             *, now_ms: int | None = None) -> str:
        issued = int(time.time() * 1000) if now_ms is None else now_ms
        token = "mem-" + secrets.token_hex(16)
        self._book[token] = Claims(method, name, args_digest(arguments), issued + self._ttl_ms,
                                   token, data or {})
        return token

    def open(self, token: Any, method: str, name: str, arguments: Any,
             *, now_ms: int | None = None) -> Claims:
        claims = self._book.get(token) if isinstance(token, str) else None
        if claims is None:
            raise StateError("unknown requestState")
        current = int(time.time() * 1000) if now_ms is None else now_ms
        if claims.expires_ms < current:
            raise StateError("requestState expired")
        if claims.method != method or claims.name != name or claims.digest != args_digest(arguments):
            raise StateError("requestState belongs to a different request")
        return claims

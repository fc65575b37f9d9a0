"""The one exception handlers raise to answer with a JSON-RPC error instead of a result."""

from __future__ import annotations

from typing import Any


class RpcError(Exception):
    """A JSON-RPC error: `code` and `message` go on the wire, `data` too when not None."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

"""Moved to `targets.endpoints` (one owner of server processes, in targets/); kept for old imports."""

from mcp_tempest.targets.endpoints import (
    Background,
    HttpSpawnEndpoint,
    HttpUrlEndpoint,
    StdioEndpoint,
    open_endpoint,
)

__all__ = ["Background", "HttpSpawnEndpoint", "HttpUrlEndpoint", "StdioEndpoint", "open_endpoint"]

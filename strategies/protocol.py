"""Wire constants of revision 2026-07-28 that the strategies need.

Why local: `strategies/` may import only pure helpers from `targets/wire.py`, which did not
exist when this package was written. These are the same facts (spec key names), kept in one
small module so switching to `targets.wire` later is a one-line change.
"""

from __future__ import annotations

REVISION = "2026-07-28"
LEGACY_REVISION = "2025-11-25"
JSONRPC = "2.0"

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
PROGRESS_TOKEN_KEY = "progressToken"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"
REQUIRED_META_KEYS = (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY)

# A vendor `_meta` key of our own: valid per the key grammar (META-10), not reserved.
PADDING_META_KEY = "dev.tempest/padding"

RESULT_COMPLETE = "complete"
RESULT_INPUT_REQUIRED = "input_required"

# Methods whose HTTP requests carry `Mcp-Name`, and the params member it mirrors.
NAME_HEADER_SOURCE = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

# Removed in 2026-07-28 (DIGEST §13 / §17).
LEGACY_METHODS = ("initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe")

# HTTP header names (names are case-insensitive on the wire; we send these spellings).
H_PROTOCOL_VERSION = "MCP-Protocol-Version"
H_METHOD = "Mcp-Method"
H_NAME = "Mcp-Name"
H_SESSION_ID = "Mcp-Session-Id"
H_CONTENT_TYPE = "Content-Type"
H_ACCEPT = "Accept"
H_ORIGIN = "Origin"
ACCEPT_VALUE = "application/json, text/event-stream"
CONTENT_TYPE_VALUE = "application/json"

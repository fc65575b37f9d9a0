"""The reference server: a small, correct, fast stateless MCP 2026-07-28 server.

Layout: `catalog` (what it offers), `core` (pure dispatch, bytes in, bytes out), `tools`, `errors`,
`store` (SQLite shared by all processes), `request_state` (sealed MRTR state), `headers`
(HTTP header checks), `subscriptions` (listen streams), `stdio_server` / `http_server`
(transport adapters), `cli` (`serve_main`).
"""

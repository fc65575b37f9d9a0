"""Load testing: Locust users speaking raw JSON-RPC over Streamable HTTP, with interleaved MRTR
operations, exact latency statistics and release gates. Runs under gevent: nothing here may start
an asyncio loop, and only `users.py` / `mcp_client.py` import Locust or gevent."""

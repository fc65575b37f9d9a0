"""mcp-tempest."""

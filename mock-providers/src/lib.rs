//! Mock LLM provider APIs and a mock MCP server (the second oracle).

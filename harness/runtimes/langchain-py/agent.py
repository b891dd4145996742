"""e2e agent for LangChain's MCP adapters for Python (`langchain-mcp-adapters==0.3.2`,
`langchain-core==1.8.3`): a LangGraph `create_react_agent` turn with the tools of a
`MultiServerMCPClient` (stdio, the mock MCP server) and `ChatOpenAI` (Chat Completions, or the
Responses API with `use_responses_api`), `ChatAnthropic` or `ChatOllama` (Ollama's /api/chat; it
streams), pointed at the mock providers."""

import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from agent import API_KEY, MODEL, print_reply, turn_config  # noqa: E402

from langchain_mcp_adapters.client import MultiServerMCPClient  # noqa: E402
from langgraph.prebuilt import create_react_agent  # noqa: E402


def model(api, base_url):
    if api in ("openai-chat", "openai-responses"):
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(
            model=MODEL,
            api_key=API_KEY,
            base_url=base_url,
            max_retries=0,
            use_responses_api=api == "openai-responses",
        )
    if api == "anthropic":
        from langchain_anthropic import ChatAnthropic

        return ChatAnthropic(model=MODEL, api_key=API_KEY, base_url=base_url, max_retries=0)
    if api == "ollama":
        from langchain_ollama import ChatOllama

        return ChatOllama(model=MODEL, base_url=base_url)
    raise ValueError(f"unknown api {api}")


async def main():
    config = turn_config()
    client = MultiServerMCPClient(
        {"normfuzz": {"transport": "stdio", "command": config["mcp"]["command"], "args": config["mcp"]["args"]}}
    )
    agent = create_react_agent(model(config["api"], config["baseUrl"]), await client.get_tools())
    # The tool call, then the reply (each a model call and a tool step).
    result = await agent.ainvoke(
        {"messages": [{"role": "user", "content": config["prompt"]}]}, {"recursion_limit": 6}
    )
    print_reply(result["messages"][-1].text)


asyncio.run(main())

"""e2e agent for LangChain's MCP adapters for Python (`langchain-mcp-adapters==0.3.2`,
`langchain-core==1.8.3`): a LangGraph `create_react_agent` turn with the tools of a
`MultiServerMCPClient` (stdio, the mock MCP server) and `ChatOpenAI` (Chat Completions, or the
Responses API with `use_responses_api`), `ChatAnthropic` or `ChatOllama` (Ollama's /api/chat; it
streams), pointed at the mock providers.

Fallback cases (`e2e --scenario fallback`, issue 26): `primary.with_fallbacks([fallback])`, the
model-level form; `create_react_agent` binds the tools on each model through
`RunnableWithFallbacks.__getattr__` (langchain_core/runnables/fallbacks.py). With the fallback's
`"wrap": "agent"`, the whole agent is wrapped instead:
`create_react_agent(primary).with_fallbacks([create_react_agent(fallback)])`. The user's image is
an `image_url` content block of the user message."""

import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from agent import API_KEY, MODEL, print_reply, turn_config, user_image  # noqa: E402

from langchain_mcp_adapters.client import MultiServerMCPClient  # noqa: E402
from langgraph.prebuilt import create_react_agent  # noqa: E402


def model(api, base_url, name=MODEL):
    if api in ("openai-chat", "openai-responses"):
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(
            model=name,
            api_key=API_KEY,
            base_url=base_url,
            max_retries=0,
            use_responses_api=api == "openai-responses",
        )
    if api == "anthropic":
        from langchain_anthropic import ChatAnthropic

        return ChatAnthropic(model=name, api_key=API_KEY, base_url=base_url, max_retries=0)
    if api == "ollama":
        from langchain_ollama import ChatOllama

        return ChatOllama(model=name, base_url=base_url)
    raise ValueError(f"unknown api {api}")


async def main():
    config = turn_config()
    client = MultiServerMCPClient(
        {"normfuzz": {"transport": "stdio", "command": config["mcp"]["command"], "args": config["mcp"]["args"]}}
    )
    chosen = model(config["api"], config["baseUrl"], config.get("model", MODEL))
    tools = await client.get_tools()
    fallback = config.get("fallback")
    if fallback and fallback.get("wrap") == "agent":
        # The whole agent wrapped (P4 case): the fallback agent starts from the input again.
        second = model(fallback["api"], fallback["baseUrl"], fallback["model"])
        agent = create_react_agent(chosen, tools).with_fallbacks([create_react_agent(second, tools)])
    else:
        if fallback:
            chosen = chosen.with_fallbacks([model(fallback["api"], fallback["baseUrl"], fallback["model"])])
        agent = create_react_agent(chosen, tools)
    content = config["prompt"]
    image = user_image(config)
    if image:
        url = f"data:{image[1]};base64,{config['userImage']['data']}"
        content = [{"type": "text", "text": content}, {"type": "image_url", "image_url": {"url": url}}]
    # Up to four tool calls of the mock model (hostile cases), each a model call and a tool
    # step, then the reply; a fallback case's two failed attempts fit too.
    state = {"messages": [{"role": "user", "content": content}]}
    if config.get("stream"):
        # A mid-stream failure case: `stream_mode="messages"` makes each model call stream
        # (langgraph's StreamMessagesHandler); the last "values" chunk is the final state.
        result = None
        async for mode, chunk in agent.astream(
            state, {"recursion_limit": 10}, stream_mode=["messages", "values"]
        ):
            if mode == "values":
                result = chunk
    else:
        result = await agent.ainvoke(state, {"recursion_limit": 10})
    print_reply(result["messages"][-1].text)


asyncio.run(main())

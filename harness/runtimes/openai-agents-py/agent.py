"""e2e agent for the OpenAI Agents SDK for Python (`openai-agents==0.24.0`): one `Runner.run` of an
`Agent` with an `MCPServerStdio` (the mock MCP server) and an `AsyncOpenAI` client pointed at the
mock providers, through `OpenAIResponsesModel` or `OpenAIChatCompletionsModel`."""

import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from agent import API_KEY, MODEL, print_reply, turn_config  # noqa: E402

from agents import (  # noqa: E402
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    set_tracing_disabled,
)
from agents.mcp import MCPServerStdio  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402


async def main():
    config = turn_config()
    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=config["baseUrl"], api_key=API_KEY, max_retries=0)
    models = {
        "openai-responses": OpenAIResponsesModel,
        "openai-chat": OpenAIChatCompletionsModel,
    }
    model = models[config["api"]](model=MODEL, openai_client=client)
    params = {"command": config["mcp"]["command"], "args": config["mcp"]["args"]}
    async with MCPServerStdio(name="normfuzz", params=params) as server:
        agent = Agent(
            name="normfuzz",
            instructions="Use the tools you are given.",
            model=model,
            mcp_servers=[server],
        )
        # The tool call, then the reply; a third model call would be the runtime's own retry.
        result = await Runner.run(agent, config["prompt"], max_turns=3)
        print_reply(result.final_output)


asyncio.run(main())

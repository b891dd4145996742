"""e2e agent for Pydantic AI (`pydantic-ai-slim==2.68.0`): one `Agent.run` with an `MCPToolset`
over FastMCP's `StdioTransport` (the mock MCP server) and a model pointed at the mock providers:
`OpenAIChatModel`, `OpenAIResponsesModel` or `AnthropicModel`, each on its SDK client with
retries off, or `BedrockConverseModel` on boto3 (`endpoint_url`; static SigV4 credentials, which the
mock does not check: botocore refuses a bearer API key on an http endpoint; `Agent.run` takes the
non-streaming `converse`).

Fallback cases (`e2e --scenario fallback`, issue 26): `FallbackModel(primary, fallback)`, the
documented way (pydantic_ai/models/fallback.py), and the user's image as `BinaryContent` in the
prompt."""

import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from agent import API_KEY, MODEL, print_reply, turn_config, user_image  # noqa: E402

from fastmcp.client.transports import StdioTransport  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.mcp import MCPToolset  # noqa: E402


def model(api, base_url, name=MODEL):
    if api in ("openai-chat", "openai-responses"):
        from openai import AsyncOpenAI
        from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider

        client = AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)
        kind = OpenAIChatModel if api == "openai-chat" else OpenAIResponsesModel
        return kind(name, provider=OpenAIProvider(openai_client=client))
    if api == "anthropic":
        from anthropic import AsyncAnthropic
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        client = AsyncAnthropic(base_url=base_url, api_key=API_KEY, max_retries=0)
        return AnthropicModel(name, provider=AnthropicProvider(anthropic_client=client))
    if api == "bedrock":
        from pydantic_ai.models.bedrock import BedrockConverseModel
        from pydantic_ai.providers.bedrock import BedrockProvider

        provider = BedrockProvider(
            base_url=base_url,
            aws_access_key_id=API_KEY,
            aws_secret_access_key=API_KEY,
            region_name="us-east-1",
        )
        return BedrockConverseModel(name, provider=provider)
    raise ValueError(f"unknown api {api}")


async def main():
    config = turn_config()
    mcp = MCPToolset(StdioTransport(config["mcp"]["command"], config["mcp"]["args"]))
    chosen = model(config["api"], config["baseUrl"], config.get("model", MODEL))
    fallback = config.get("fallback")
    if fallback:
        from pydantic_ai.models.fallback import FallbackModel

        chosen = FallbackModel(chosen, model(fallback["api"], fallback["baseUrl"], fallback["model"]))
    agent = Agent(chosen, toolsets=[mcp], instructions="Use the tools you are given.")
    prompt = config["prompt"]
    image = user_image(config)
    if image:
        from pydantic_ai import BinaryContent

        prompt = [prompt, BinaryContent(data=image[0], media_type=image[1])]
    result = await agent.run(prompt, event_stream_handler=drain if config.get("stream") else None)
    print_reply(result.output)


async def drain(_ctx, events):
    """With an event stream handler, `Agent.run` streams each model request (a mid-stream
    failure case); the events themselves are not needed."""
    async for _ in events:
        pass


asyncio.run(main())

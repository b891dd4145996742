"""e2e agent for AstrBot (`astrbot==4.29.3`): one turn of AstrBot's own agent loop with its own
parts, as `build_main_agent` (astrbot/core/astr_main_agent.py) wires them, without the platform
and pipeline around it: `ToolLoopAgentRunner.step_until_done` (128 steps, the default
`max_steps` of agent_sub_stages/internal.py) with `FunctionToolExecutor`, the mock MCP server
connected over stdio by AstrBot's `MCPClient.connect_to_server` (its stdio allowlist opened to the
mock's binary by ASTRBOT_MCP_STDIO_ALLOWED_COMMANDS, e2e.toml) and wrapped in `MCPTool`s, and one
of AstrBot's provider sources pointed at the mock through `api_base`: `ProviderOpenAIOfficial`
(OpenAI Chat), `ProviderOpenAIResponses`, `ProviderAnthropic` or `ProviderGoogleGenAI` (Gemini).
Hooks are the no-op `BaseAgentRunHooks` (MainAgentHooks only call plugin event hooks, which need a
platform event). AstrBot's data folder is ASTRBOT_ROOT (e2e.toml: the case's folder).

Besides the MCP tools the model gets AstrBot's built-in `send_message_to_user`
(core/tools/message_tools.py), run by `FunctionToolExecutor` as the main agent runs it, with a
stand-in for the platform it sends through: AstrBot's default config (no local computer use) and
a `send_message` that readies each media component as AstrBot's Telegram adapter does
(platform/sources/telegram/tg_event.py: `convert_to_file_path`, which downloads a URL)."""

import asyncio
import logging
import os
import sys
from types import SimpleNamespace

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

# AstrBot's console log sink writes to stdout, where the reply goes: fd 1 goes to stderr.
reply_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)

from agent import API_KEY, MODEL, print_reply, turn_config  # noqa: E402

from astrbot.core.agent.hooks import BaseAgentRunHooks  # noqa: E402
from astrbot.core.agent.mcp_client import MCPClient, MCPTool  # noqa: E402
from astrbot.core.agent.run_context import ContextWrapper  # noqa: E402
from astrbot.core.agent.runners.tool_loop_agent_runner import ToolLoopAgentRunner  # noqa: E402
from astrbot.core.agent.tool import ToolSet  # noqa: E402
from astrbot.core.astr_agent_tool_exec import FunctionToolExecutor  # noqa: E402
from astrbot.core.provider.entities import ProviderRequest  # noqa: E402
from astrbot.core.tools.message_tools import SendMessageToUserTool  # noqa: E402

# The default of the agent runner's settings (core/config/agent_runner.py `tool_call_timeout`).
TOOL_CALL_TIMEOUT = 120
MAX_STEPS = 128


# The session the user's message came from (platform_id:message_type:session_id).
SESSION = "telegram:FriendMessage:normfuzz-user"


class Platform:
    """AstrBot's `Context` as `send_message_to_user` reads it."""

    def get_config(self, umo=None):
        return {"provider_settings": {"computer_use_runtime": "none"}}

    async def send_message(self, session, chain):
        for component in chain.chain:
            if hasattr(component, "convert_to_file_path"):
                await component.convert_to_file_path()
        return True


class Event(SimpleNamespace):
    """The user's message event, as far as the tool executor and the send tool read it."""

    def __init__(self):
        super().__init__(unified_msg_origin=SESSION, role="member", _has_send_oper=False, extras={})

    def get_extra(self, key, default=None):
        return self.extras.get(key, default)

    def set_extra(self, key, value):
        self.extras[key] = value

    def get_result(self):
        return None


def provider(api, base_url):
    """The provider source AstrBot's ProviderManager loads for a provider entry of type `api`
    (e2e.toml's flavours name AstrBot's own types, as data/cmd_config.json does)."""
    config = {"id": "mock", "type": api, "key": [API_KEY], "api_base": base_url, "model": MODEL}
    if api == "openai_chat_completion":
        from astrbot.core.provider.sources.openai_source import ProviderOpenAIOfficial

        return ProviderOpenAIOfficial(config, {})
    if api == "openai_responses":
        from astrbot.core.provider.sources.openai_responses_source import ProviderOpenAIResponses

        return ProviderOpenAIResponses(config, {})
    if api == "anthropic_chat_completion":
        from astrbot.core.provider.sources.anthropic_source import ProviderAnthropic

        return ProviderAnthropic(config, {})
    if api == "googlegenai_chat_completion":
        from astrbot.core.provider.sources.gemini_source import ProviderGoogleGenAI

        return ProviderGoogleGenAI(config, {})
    raise ValueError(f"unknown api {api}")


async def main():
    config = turn_config()
    client = MCPClient()
    server = {"command": config["mcp"]["command"], "args": config["mcp"]["args"]}
    await client.connect_to_server(server, "mock")
    try:
        await client.list_tools_and_save()
        tools = ToolSet([*(MCPTool(tool, client, "mock") for tool in client.tools), SendMessageToUserTool()])
        runner = ToolLoopAgentRunner()
        await runner.reset(
            provider=provider(config["api"], config["baseUrl"]),
            request=ProviderRequest(prompt=config["prompt"], func_tool=tools),
            run_context=ContextWrapper(
                context=SimpleNamespace(context=Platform(), event=Event(), extra={}),
                tool_call_timeout=TOOL_CALL_TIMEOUT,
            ),
            tool_executor=FunctionToolExecutor(),
            agent_hooks=BaseAgentRunHooks(),
        )
        async for _ in runner.step_until_done(MAX_STEPS):
            pass
        final = runner.get_final_llm_resp()
        if final is None:
            raise RuntimeError("the agent ended without a reply")
        # An `err` response (a provider error: `step` turns it into "LLM 响应错误: ...") is what
        # AstrBot's pipeline sends the user, as a channel turn shows: a clear error, not a crash.
        # lib/agent.py's `print_reply` writes to sys.stdout: the reply's copy of fd 1.
        sys.stdout = reply_out
        print_reply(final.completion_text)
    finally:
        await client.cleanup()


logging.disable(logging.CRITICAL)
asyncio.run(main())

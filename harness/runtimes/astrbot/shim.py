"""Protocol shim: AstrBot, `astrbot==4.29.3` (with `mcp==1.30.0`).

Code under test: the agent loop itself, `ToolLoopAgentRunner` (astrbot/core/agent/runners/
tool_loop_agent_runner.py), as `build_main_agent` (astr_main_agent.py) sets it up: `reset` with a
`ProviderRequest` whose tool set holds one real `MCPTool` (core/agent/mcp_client.py) and the real
`FunctionToolExecutor` (core/astr_agent_tool_exec.py, `_execute_mcp`), then two `step`s. The
provider is a stub `Provider`: its first `text_chat` answers one tool call (`t`, id `call_1`),
its second records the `contexts` it is sent, which is what a real provider converts into its
request. The MCP tool calls `MCPClient.call_tool_with_reconnect` on a stand-in session whose
`call_tool` returns the case validated by the MCP SDK as `ClientSession.call_tool` does
(lib/shim.py). On the way, `_handle_function_tools` turns the `CallToolResult` into one tool
message (texts joined by blank lines, an image written to the tool-image cache and named there by
path, a text resource as its text) and `step` appends the cached images as a user message of data
URIs; an exception in the tool call becomes the tool message `error: <message>`.

Mapping of what the model gets (the second call's contexts after the assistant's tool call) to the
protocol's answer:
- the tool message of `call_1` → one text block (its content; no tool message, no block);
- the user message after it: text parts → text blocks, `data:` image URLs → image blocks (media
  type and base64 from the URI), any other image URL → a text block `[image_url <url>]`;
- `isError` is always false: AstrBot never reads it (nothing in the runner or the executor does).
A result the SDK refuses is raised by the session and reaches the model as `error: ...` (AstrBot
catches it); a result that is not an object, or a message the SDK's parser drops, is never
answered (the tool call waits for its 120 s `tool_call_timeout`): answered as an `error`.

Hooks are AstrBot's no-op `BaseAgentRunHooks` (MainAgentHooks only call plugin event hooks);
streaming is off (the default `streaming_response`) and no file-read tool is configured, so an
oversized result is not spilled to a file. `--modalities text,tool_use` configures the provider's
`modalities` (a text-only model: `sanitize_contexts_by_modalities` and no image message);
without it they are unconfigured, which AstrBot reads as every modality.

AstrBot writes under `<ASTRBOT_ROOT>/data` (`get_astrbot_data_path`, the cwd by default): the
shim points ASTRBOT_ROOT and its cwd at a temporary folder it removes on exit (and those of killed
shims at start), empties the
tool-image cache after each case, sends proxied traffic to a closed port and writes the protocol
on a copy of stdout while fd 1 goes to stderr (AstrBot's loguru console sink writes to stdout).

Usage: <venv>/bin/python shim.py [--modalities text,image,tool_use]
"""

import argparse
import atexit
import logging
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))

PREFIX = "normfuzz-astrbot-"


def remove_orphans():
    """Removes the folders of earlier shims that were killed (the harness SIGKILLs a shim that
    hangs or outlives its grace period, so their exit handler never ran)."""
    tmp = tempfile.gettempdir()
    for name in os.listdir(tmp):
        pid = name[len(PREFIX) :].split("-", 1)[0]
        if not name.startswith(PREFIX) or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)
        except OSError:
            pass  # alive, another user's


remove_orphans()
ROOT = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-")
atexit.register(shutil.rmtree, ROOT, ignore_errors=True)
os.environ["ASTRBOT_ROOT"] = ROOT
os.chdir(ROOT)
for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
    os.environ[var] = "http://127.0.0.1:9"
os.environ.pop("NO_PROXY", None)
os.environ.pop("no_proxy", None)

# The protocol gets a copy of stdout; fd 1 (and the sys.stdout AstrBot's logger captures on
# import) goes to stderr.
PROTOCOL = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)

from shim import Refused, Unparsable, leave, serve, validate_call_tool_result  # noqa: E402

from astrbot.core.agent.hooks import BaseAgentRunHooks  # noqa: E402
from astrbot.core.agent.mcp_client import MCPClient, MCPTool  # noqa: E402
from astrbot.core.agent.message import Message  # noqa: E402
from astrbot.core.agent.run_context import ContextWrapper  # noqa: E402
from astrbot.core.agent.runners.tool_loop_agent_runner import ToolLoopAgentRunner  # noqa: E402
from astrbot.core.agent.tool import ToolSet  # noqa: E402
from astrbot.core.agent.tool_image_cache import tool_image_cache  # noqa: E402
from astrbot.core.astr_agent_tool_exec import FunctionToolExecutor  # noqa: E402
from astrbot.core.provider.entities import LLMResponse, ProviderRequest  # noqa: E402
from astrbot.core.provider.provider import Provider  # noqa: E402
from mcp import types  # noqa: E402

# Log records cost time per case and say nothing the answer does not.
logging.disable(logging.CRITICAL)

TOOL_CALL_ID = "call_1"


class NeverAnswered(Exception):
    """The MCP session never answers this result (AstrBot then waits for its tool_call_timeout)."""


class CaseSession:
    """What `MCPClient.call_tool_with_reconnect` calls on `mcp.ClientSession`."""

    current = None
    never_answered = None

    async def call_tool(self, name, arguments=None, read_timeout_seconds=None, **kwargs):
        if isinstance(self.current, Unparsable):
            self.never_answered = f"the SDK's parser drops the message: {self.current.reason}"
        elif not isinstance(self.current, dict):
            self.never_answered = "the session drops a JSON-RPC result that is not an object"
        if self.never_answered:
            raise NeverAnswered(self.never_answered)
        try:
            return validate_call_tool_result(self.current)
        except Refused as err:
            # `ClientSession.send_request` raises the pydantic ValidationError itself.
            raise err.__cause__ or err


class StubProvider(Provider):
    """A chat provider that calls the tool once, then records what it is sent."""

    def __init__(self, modalities):
        config = {"id": "normfuzz-stub", "type": "normfuzz_stub"}
        if modalities:
            config["modalities"] = modalities
        super().__init__(config, {})
        self.calls = 0
        self.contexts = None

    def get_current_key(self):
        return ""

    def set_key(self, key):
        pass

    async def get_models(self):
        return ["stub"]

    async def text_chat(self, contexts=None, **kwargs):
        self.calls += 1
        if self.calls == 1:
            return LLMResponse(
                role="assistant",
                tools_call_name=["t"],
                tools_call_args=[{}],
                tools_call_ids=[TOOL_CALL_ID],
            )
        self.contexts = [m.model_dump() if isinstance(m, Message) else m for m in contexts or []]
        return LLMResponse(role="assistant", completion_text="done")


session = CaseSession()
client = MCPClient()
client.session = session
tool = MCPTool(types.Tool(name="t", inputSchema={"type": "object"}), client, "normfuzz")


def text_block(text):
    return {"type": "text", "text": text}


def part_block(part):
    """A content part of the image message (core/agent/message.py: TextPart, ImageURLPart)."""
    kind = part.get("type")
    if kind == "text":
        return text_block(part.get("text"))
    if kind == "image_url":
        url = (part.get("image_url") or {}).get("url") or ""
        head, sep, data = url.partition(";base64,")
        if sep and head.startswith("data:"):
            return {"type": "image", "data": data, "mimeType": head[len("data:") :]}
        return text_block(f"[image_url {url}]")
    return text_block(f"[{kind}]")


def model_view(contexts):
    """The blocks of what the model gets after its tool call (see the module's docstring)."""
    start = max(
        (i for i, m in enumerate(contexts) if m.get("role") == "assistant" and m.get("tool_calls")),
        default=None,
    )
    if start is None:
        raise Refused(f"the model was not sent its tool call: {[m.get('role') for m in contexts]}")
    blocks = []
    for message in contexts[start + 1 :]:
        content = message.get("content")
        if message.get("role") == "tool" and message.get("tool_call_id") != TOOL_CALL_ID:
            continue
        if isinstance(content, str):
            blocks.append(text_block(content))
        elif isinstance(content, list):
            blocks.extend(
                part_block(p) if isinstance(p, dict) else text_block(str(p)) for p in content
            )
    return blocks


def clear_image_cache():
    cache = tool_image_cache._cache_dir
    shutil.rmtree(cache, ignore_errors=True)
    os.makedirs(cache, exist_ok=True)


def coerce_with(modalities):
    async def coerce(value):
        session.current = value
        session.never_answered = None
        provider = StubProvider(modalities)
        runner = ToolLoopAgentRunner()
        request = ProviderRequest(prompt="Call the tool t.", func_tool=ToolSet([tool]))
        await runner.reset(
            provider=provider,
            request=request,
            run_context=ContextWrapper(context=None),
            tool_executor=FunctionToolExecutor(),
            agent_hooks=BaseAgentRunHooks(),
            streaming=False,
        )
        try:
            for _ in range(2):
                async for _ in runner.step():
                    pass
        finally:
            clear_image_cache()
        if session.never_answered:
            raise Refused(f"{session.never_answered}; the tool call waits for its timeout")
        if provider.contexts is None:
            raise Refused("the agent ended before the model saw the tool result")
        return {"content": model_view(provider.contexts), "isError": False}

    return coerce


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--modalities", help="the provider's modalities, comma-separated")
    args = parser.parse_args()
    modalities = args.modalities.split(",") if args.modalities else None
    # lib/shim.py's `serve` writes to sys.stdout.buffer: the protocol's copy.
    sys.stdout = PROTOCOL
    name = "astrbot astrbot==4.29.3" + (f" modalities={args.modalities}" if modalities else "")
    serve(name, {"coerce_tool_result": coerce_with(modalities)})
    # Now, not at interpreter exit: the harness kills a shim that takes long to exit.
    shutil.rmtree(ROOT, ignore_errors=True)
    leave()


main()

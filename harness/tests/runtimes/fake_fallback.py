#!/usr/bin/env python3
"""A stand-in runtime with a model fallback, for testing `normfuzz e2e --scenario fallback`
itself (stdlib only; adapter: fake-fallback.toml).

One agent turn against a primary model and, when a request to it fails, its fallback: the
user's message (with the image the config's `userImage` carries), the tool call the model asks
for (the mock MCP server), the reply. It speaks OpenAI Chat Completions and Anthropic Messages
(not streamed). FAKE_MODE=good follows the rules: on a fallback to another API, or after a 400,
every image leaves the history (a note stays), the history is kept, so the fallback is told
the tool ran (R2, R3, R5, P4). FAKE_MODE=bad restarts the turn on the fallback from the user's
message, images included, so the fallback runs the tool again untold (R3, P4), as an agent
wrapped whole in a fallback does.
"""
import json, os, sys, urllib.error

import fake_runtime  # beside this script: the shared HTTP and MCP client code
from fake_runtime import post

MODE = os.environ.get("FAKE_MODE", "good")


def call_tool(server, name):
    """(texts, images) of the tool's result (fake_runtime.call_tool runs the MCP exchange)."""
    result = fake_runtime.call_tool(server, name) or {}
    texts = [b["text"] for b in result.get("content", []) if b.get("type") == "text"]
    images = [b["data"] for b in result.get("content", []) if b.get("type") == "image"]
    return "\n".join(texts), images


def ask(model, history, tool):
    """(tool call id or None, text) of one model answer; history items: user/assistant/tool."""
    if model["api"] == "anthropic":
        messages = []
        for h in history:
            if h["role"] == "assistant":
                messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": h["id"], "name": tool, "input": {}}]})
                continue
            images = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": d}} for d in h["images"]]
            if h["role"] == "tool":
                content = [{"type": "tool_result", "tool_use_id": h["id"], "content": [{"type": "text", "text": h["text"]}, *images]}]
            else:
                content = [{"type": "text", "text": h["text"]}, *images]
            messages.append({"role": "user", "content": content})
        answer = post(model["baseUrl"] + "/v1/messages",
                      {"model": model["model"], "max_tokens": 256, "messages": messages,
                       "tools": [{"name": tool, "input_schema": {"type": "object"}}]},
                      {"x-api-key": "mock-local", "anthropic-version": "2023-06-01"})
        for block in answer["content"]:
            if block["type"] == "tool_use":
                return block["id"], None
        return None, "".join(b.get("text", "") for b in answer["content"])
    messages = []
    for h in history:
        if h["role"] == "assistant":
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": h["id"], "type": "function", "function": {"name": tool, "arguments": "{}"}}]})
            continue
        if h["role"] == "tool":
            messages.append({"role": "tool", "tool_call_id": h["id"], "content": h["text"]})
            content = []
        else:
            content = [{"type": "text", "text": h["text"]}]
        content += [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + d}} for d in h["images"]]
        if content:
            messages.append({"role": "user", "content": content})
    answer = post(model["baseUrl"] + "/chat/completions",
                  {"model": model["model"], "messages": messages,
                   "tools": [{"type": "function", "function": {"name": tool, "parameters": {"type": "object"}}}]})
    message = answer["choices"][0]["message"]
    calls = message.get("tool_calls") or []
    return (calls[0]["id"], None) if calls else (None, message.get("content") or "")


def strip_images(history):
    for h in history:
        if h.get("images"):
            h["text"] += f"\n[{len(h['images'])} image(s) omitted on a fallback]"
            h["images"] = []


def main():
    config = json.load(open(sys.argv[1]))
    primary = {"api": config["api"], "baseUrl": config["baseUrl"], "model": config["model"]}
    fallback = config["fallback"]
    image = config.get("userImage")
    start = [{"role": "user", "text": config["prompt"], "images": [image["data"]] if image else []}]
    history = json.loads(json.dumps(start))
    model = primary
    for _ in range(8):
        try:
            call, text = ask(model, history, config["tool"])
        except urllib.error.HTTPError as e:
            if model is not primary or not fallback:
                raise
            model = fallback
            if MODE == "bad":
                history = json.loads(json.dumps(start))
            elif fallback["api"] != primary["api"] or e.code == 400:
                strip_images(history)
            continue
        if call is None:
            print(json.dumps({"text": text}))
            return
        result, images = call_tool(config["mcp"], config["tool"])
        history += [{"role": "assistant", "id": call}, {"role": "tool", "id": call, "text": result, "images": images}]
    sys.exit("too many steps")


if __name__ == "__main__":
    main()

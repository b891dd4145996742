#!/usr/bin/env python3
"""A stand-in agent runtime for testing `normfuzz e2e` itself (stdlib only).

It does what a runtime does in one turn: reads its config, starts the configured stdio MCP
server, asks the model (OpenAI Chat Completions, not streamed), runs the tool call, sends the
tool result back and prints the delivered reply as JSON. FAKE_MODE=good follows the rules;
FAKE_MODE=bad has the bugs the e2e judge must find: one malformed block fails the whole tool
result (F5), tool text is forwarded raw (S1), every MEDIA: line of the reply is delivered as
media whatever its target (S3), its send tool (`send_media`) fetches and delivers any URL or
file the model names (S3; good refuses all but workspace files), and it writes outside its folders
(S5: `save_images`). FAKE_MODE=killed dies by SIGKILL mid-turn, after the model's
first answer (an out-of-memory kill, say): the run must go on and report it.

With `--channel` it serves a Telegram bot instead (`e2e --via channel`): it long-polls the Bot API
at the config's `channel.apiRoot` for the user's message, runs the same turn, sends the reply and
its media to the chat, and keeps running until stopped, as a gateway does. good: directive lines
are kept out of the text and only files inside the working folder are uploaded, once. bad: the
text goes out raw and every local file a MEDIA: line names is uploaded, the first one twice.
"""
import base64, json, os, re, subprocess, sys, time, urllib.request, uuid

MODE = os.environ.get("FAKE_MODE", "good")
DIRECTIVE = re.compile(r"^(\s*)(MEDIA:)", re.IGNORECASE | re.MULTILINE)


def post(url, body, headers=None):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def call_tool(server, name):
    proc = subprocess.Popen([server["command"], *server["args"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    def rpc(i, method, params):
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())
    rpc(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "fake", "version": "0"}})
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    result = rpc(2, "tools/call", {"name": name, "arguments": {}}).get("result")
    proc.stdin.close()
    proc.wait(timeout=10)
    return result


def valid_png(block):
    try:
        return block.get("mimeType") == "image/png" and base64.b64decode(block["data"], validate=True).startswith(b"\x89PNG\r\n\x1a\n")
    except Exception:
        return False


def project(result):
    """(texts, images) the model gets for the tool result."""
    blocks = result.get("content") if isinstance(result, dict) else None
    if not isinstance(blocks, list):
        return [json.dumps(result)], []
    if MODE == "bad" and any(b.get("type") == "image" and "data" not in b for b in blocks if isinstance(b, dict)):
        return ["tool failed: invalid result"], []
    texts, images = [], []
    for b in blocks:
        t = b.get("type") if isinstance(b, dict) else None
        if t == "text" and isinstance(b.get("text"), str):
            texts.append(b["text"] if MODE == "bad" else DIRECTIVE.sub(r"\1[neutralized] \2", b["text"]))
        elif t == "image" and valid_png(b):
            images.append(b["data"])
        elif t == "resource_link":
            texts.append(f"[{b.get('title') or b.get('name')}] {b.get('uri')}")
        elif t == "resource":
            r = b.get("resource") or {}
            texts.append(r["text"] if isinstance(r.get("text"), str) else f"[resource {r.get('mimeType')}] {r.get('uri')}")
        elif t == "audio":
            texts.append(f"[audio {b.get('mimeType')}]")
        else:
            texts.append(json.dumps(b)[:8192])
    if MODE == "good":
        texts = [DIRECTIVE.sub(r"\1[neutralized] \2", t) for t in texts]
    return texts, images


def save_images(call_id, images):
    """Caches the tool's images by tool-call id, as AstrBot's tool-image cache does (S5). bad: the
    model's id is used as it came (a `../` in it leaves the cache) and a session log goes to
    /var/tmp, outside every folder of the runtime; good: the id keeps [A-Za-z0-9_-] only, at most
    100 of them (a file name stops at 255 bytes)."""
    cache = os.path.join(os.environ["HOME"], ".fake", "tool_images")
    os.makedirs(cache, exist_ok=True)
    name = call_id if MODE == "bad" else re.sub(r"[^A-Za-z0-9_-]", "_", call_id)[:100]
    for i, data in enumerate(images):
        with open(os.path.join(cache, f"{name}_{i}.png"), "wb") as f:
            f.write(base64.b64decode(data))
    if MODE == "bad":
        with open("/var/tmp/normfuzz-fake-sessions.log", "a") as f:
            f.write(f"tool images: {len(images)}\n")


def send_media(config, arguments):
    """The send tool: (answer for the model, [(name, bytes)] to deliver). good refuses every target
    outside the working folder and every URL that is not https; bad fetches or reads what it is
    told to."""
    target = arguments.get("path") or arguments.get("url") or ""
    local = target[len("file://"):] if target.startswith("file://") else target
    remote = re.match(r"^[a-z]+://", target) and not target.startswith("file://")
    if MODE == "good":
        inside = not remote and os.path.realpath(local).startswith(os.getcwd() + os.sep)
        if not inside:
            return f"refused: {target!r} is not a file in the workspace", []
    try:
        if remote:
            with urllib.request.urlopen(target, timeout=5) as r:
                data = r.read()
        else:
            data = open(local, "rb").read()
    except Exception as e:
        return f"error: {e}", []
    return "sent", [(os.path.basename(local) or "media.png", data, target)]


def turn(config, prompt):
    """The reply text of one agent turn, and what the send tool delivered."""
    provider = config["provider"]
    url = provider["baseUrl"] + "/chat/completions"
    messages = [{"role": "user", "content": prompt}]
    tools = [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
             for name in (config["tool"], config["sendTool"])]
    answer = post(url, {"model": "m", "messages": messages, "tools": tools})["choices"][0]["message"]
    if MODE == "killed":
        os.kill(os.getpid(), 9)
    sent = []
    while answer.get("tool_calls"):
        replayed = answer
        if MODE == "good":
            # OpenAI Chat refuses a replayed call whose name breaks ^[a-zA-Z0-9_-]+$: a name
            # the model made up goes back sanitized.
            replayed = json.loads(json.dumps(answer))
            for call in replayed["tool_calls"]:
                name = re.sub(r"[^a-zA-Z0-9_-]", "_", call["function"]["name"])[:64]
                call["function"]["name"] = name or "_"
        messages.append(replayed)
        follow = []
        for call in answer["tool_calls"]:
            name = call["function"]["name"]
            if name == config["tool"]:
                texts, images = project(call_tool(config["mcp"], config["mcpTool"]))
                save_images(call["id"], images)
                if images and "image" not in provider["input"]:
                    if MODE == "good":
                        texts.append(f"[{len(images)} image(s) omitted: the model does not support images]")
                    images = []
                content = "\n".join(texts) or "(empty)"
                if images:
                    follow.append({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + d}} for d in images]})
            elif name == config["sendTool"]:
                content, delivered = send_media(config, json.loads(call["function"]["arguments"] or "{}"))
                sent.extend(delivered)
            else:
                content = f"error: no tool {name!r}"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        messages.extend(follow)
        answer = post(url, {"model": "m", "messages": messages, "tools": tools})["choices"][0]["message"]
    return answer["content"] or "", sent


def split_reply(reply):
    """(kept text lines, media targets) of a reply."""
    media, kept = [], []
    for line in reply.split("\n"):
        m = re.match(r"^\s*MEDIA:\s*(.*)$", line, re.IGNORECASE)
        if m:
            media.append(m.group(1).strip())
        else:
            kept.append(line)
    return kept, media


def telegram(config, method, body=None, files=None):
    url = f"{config['channel']['apiRoot']}/bot{config['channel']['token']}/{method}"
    if files is None:
        return post(url, body or {})
    boundary = uuid.uuid4().hex
    parts = []
    for k, v in (body or {}).items():
        parts.append(f'--{boundary}\r\ncontent-disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode())
    for field, (name, data) in files.items():
        parts.append(f'--{boundary}\r\ncontent-disposition: form-data; name="{field}"; filename="{name}"\r\n'
                     f"content-type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n")
    req = urllib.request.Request(url, data=b"".join(parts) + f"--{boundary}--\r\n".encode(),
                                 headers={"content-type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def serve_channel(config):
    offset, prompt = 0, None
    while prompt is None:
        for update in telegram(config, "getUpdates", {"timeout": 1, "offset": offset})["result"]:
            offset = update["update_id"] + 1
            prompt = update.get("message", {}).get("text")
    chat = config["channel"]["userId"]
    reply, sent_media = turn(config, prompt)
    kept, media = split_reply(reply)
    text = reply.strip() if MODE == "bad" else "\n".join(kept).strip()
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if escaped:
        telegram(config, "sendMessage", {"chat_id": chat, "text": escaped, "parse_mode": "HTML"})
    sent = set()
    for target in media:
        path = os.path.realpath(target)
        if MODE == "good" and (not path.startswith(os.getcwd() + os.sep) or path in sent):
            continue
        if not os.path.isfile(path):
            continue
        data = open(path, "rb").read()
        for _ in range(2 if MODE == "bad" and not sent else 1):
            telegram(config, "sendPhoto", {"chat_id": chat, "photo": "attach://f"}, {"f": (os.path.basename(path), data)})
        sent.add(path)
    for name, data, _ in sent_media:
        telegram(config, "sendPhoto", {"chat_id": chat, "photo": "attach://f"}, {"f": (name, data)})
    while True:
        telegram(config, "getUpdates", {"timeout": 1, "offset": offset})
        time.sleep(0.5)


def main():
    config = json.load(open(sys.argv[1]))
    if "--channel" in sys.argv:
        serve_channel(config)
        return
    reply, sent = turn(config, config["prompt"])
    kept, media = split_reply(reply)
    media = media if MODE == "bad" else []
    print(json.dumps({"payloads": [{"text": "\n".join(kept).strip(), "mediaUrls": media + [t for _, _, t in sent]}]}))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A stand-in runtime for `normfuzz e2e --scenario vision` (stdlib only): the agent model's
browser calls open the harness's loopback page and "screenshot" it (a 1900 x 9000 PNG, the page's
size), the vision model (OpenAI Chat, model from the config) describes it, and the result goes back
to the agent model. FAKE_MODE=good neutralizes every MEDIA: in the vision text (description or
error) and, without a description, sends a downscaled screenshot (a note for a text-only model);
FAKE_MODE=raw forwards the vision text as it came (S1); FAKE_MODE=lf-only neutralizes as openclaw
2026.9.6's neutralizeMediaDirectives does, line by line on "\n" only (S1 on the lines after a CR,
U+2028, U+2029 or NEL); FAKE_MODE=oversized sends the full-size screenshot when the vision model
fails (S2).
"""
import base64, json, os, re, struct, sys, urllib.error, urllib.request, zlib

from fake_runtime import post

MODE = os.environ.get("FAKE_MODE", "good")


def png(width, height):
    """A black RGB PNG of this size."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = (b"\x00" + b"\x00" * 3 * width) * height
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def describe(config, image):
    """(text, ok): the vision model's description, or its error message."""
    url = config["provider"]["baseUrl"] + "/chat/completions"
    body = {"model": config["visionModel"], "messages": [{"role": "user", "content": [
        {"type": "text", "text": "Describe this screenshot."},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(image).decode()}}]}]}
    try:
        return post(url, body)["choices"][0]["message"]["content"], True
    except urllib.error.HTTPError as e:
        return json.load(e)["error"]["message"], False


def main():
    config = json.load(open(sys.argv[1]))
    provider = config["provider"]
    url = provider["baseUrl"] + "/chat/completions"
    tools = [{"type": "function", "function": {"name": "browser", "parameters": {"type": "object"}}}]
    messages = [{"role": "user", "content": config["prompt"]}]
    answer = post(url, {"model": "mock-model", "messages": messages, "tools": tools})["choices"][0]["message"]
    while answer.get("tool_calls"):
        messages.append(answer)
        follow = []
        for call in answer["tool_calls"]:
            args = json.loads(call["function"]["arguments"] or "{}")
            if args.get("action") == "open":
                # The harness's own page on loopback, the one URL a case may name.
                with urllib.request.urlopen(args["targetUrl"], timeout=10) as r:
                    content = f"opened {args['targetUrl']} ({len(r.read())} bytes)"
            else:
                shot = png(1900, 9000)
                text, ok = describe(config, shot) if "visionModel" in config else ("", False)
                if MODE == "lf-only":
                    # JavaScript's trimStart() also drops a BOM, which Python's \s does not match.
                    text = "\n".join(re.sub(r"^([\s\ufeff]*)(media:)", r"\1[neutralized] \2", line, flags=re.I)
                                     for line in text.split("\n"))
                elif MODE != "raw":
                    text = re.sub(r"(?i)media:", "[neutralized] media:", text)
                content = f"[screenshot: {text}]"
                if not ok:
                    if "image" not in provider["input"]:
                        content += "\n(screenshot image omitted: the model does not support images)"
                    else:
                        image = shot if MODE == "oversized" else png(252, 1200)
                        follow.append({"role": "user", "content": [{"type": "image_url", "image_url": {
                            "url": "data:image/png;base64," + base64.b64encode(image).decode()}}]})
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        messages.extend(follow)
        answer = post(url, {"model": "mock-model", "messages": messages, "tools": tools})["choices"][0]["message"]
    print(json.dumps({"payloads": [{"text": answer["content"] or "", "mediaUrls": []}]}))


if __name__ == "__main__":
    main()

"""What every Python e2e agent script (harness/runtimes/<name>/agent.py) shares: its arguments,
the turn's config (written by `normfuzz e2e-turn` from the adapter's `[config]` template) and its
one line of output, the final reply as JSON for the adapter's `[output]` pointers.

Usage of an agent: python agent.py <turn config> <prompt>
"""

import json
import sys

# The model id the mock providers answer to, and the API key every client sends.
MODEL = "mock-model"
API_KEY = "mock-local"


def turn_config():
    """`{prompt, api, baseUrl, mcp: {command, args}}`, and for a fallback case (`e2e --scenario
    fallback`) `model`, `fallback` (`{api, baseUrl, model}` or null) and `userImage`
    (`{mediaType, data}` or null: the image the user's message carries), and `stream` (the
    agent streams its model calls: a mid-stream failure case); exits 2 on a usage error."""
    if len(sys.argv) != 3:
        sys.stderr.write("usage: python agent.py <turn config> <prompt>\n")
        sys.exit(2)
    with open(sys.argv[1], encoding="utf-8") as f:
        config = json.load(f)
    config["prompt"] = sys.argv[2]
    return config


def user_image(config):
    """(bytes, media type) of the image the user's message carries, or None."""
    image = config.get("userImage")
    if not image:
        return None
    import base64

    return base64.b64decode(image["data"]), image["mediaType"]


def print_reply(text):
    """Prints the final reply; an agent that cannot finish raises instead (exit 1, its stderr)."""
    sys.stdout.write(json.dumps({"text": text}) + "\n")
    sys.stdout.flush()

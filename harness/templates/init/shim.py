"""normfuzz shim for {name}: speaks the SUT protocol (docs/spec/sut-protocol.md in normfuzz) on
stdin/stdout and hands each case to your normalizer. Made by `normfuzz init`; yours to edit.

Fill in the handlers below: each takes the op's input and returns its output. A handler left
None is not offered, so normfuzz does not test that op. Raising answers an `error` (a refusal,
compared with the reference); crashing the process is a finding (B1). Logs go to stderr: stdout
carries protocol lines only.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shim_coverage import Coverage  # noqa: E402  (written by `normfuzz init` next to this shim)

# Your normalizer's files or functions, `<file glob>[:<function>]` (one per line): the report
# shows how much of them the campaign reached, with the lines it never did. Empty: not measured.
COVERAGE = ""  # e.g. "mypkg/normalize.py:coerce_tool_result"

HANDLERS = {
    # An MCP CallToolResult (any JSON, malformed on purpose) -> what your runtime sends the model:
    # {"content": [{"type": "text", "text"} | {"type": "image", "data", "mimeType"}], "isError"}
    "coerce_tool_result": None,
    # {"text"} -> {"text"}: untrusted text, every line that reads as a `MEDIA:` directive defused.
    "neutralize_text": None,
    # {"url"} -> {"allowed", "reason"?}: may this URL be fetched or delivered as media?
    "check_media_url": None,
    # {"text", "roots"} -> {"text", "mediaUrls", "audioAsVoice", "replyTo", "embeds", "rejectedMedia"}
    "parse_reply": None,
    # {"chunks", "final", "roots"} -> {"deliveries": [{"text", "mediaUrls"}]}
    "normalize_stream": None,
    # {"attempt", "previousFailure", "primaryProvider", "candidateProvider", "images"} -> {"images"}
    "resolve_retry_images": None,
    # {"names"} -> {"names"}
    "sanitize_tool_names": None,
}

# An answer longer than this is refused rather than written: normfuzz bounds answer lines
# (64 MiB by default) and a runaway output would be a protocol finding.
MAX_ANSWER_BYTES = 16 << 20


def main() -> None:
    offered = {op: f for op, f in HANDLERS.items() if f is not None}
    coverage = Coverage.from_env(COVERAGE)
    handshake = {"normfuzz": 1, "name": "{name}", "ops": list(offered)}
    if coverage is not None:
        handshake["coverage"] = coverage.offer()
    out = sys.stdout.buffer
    out.write(json.dumps(handshake).encode() + b"\n")
    out.flush()
    # The binary stdin splits at b"\n" only (`str.splitlines` also splits at U+0085, U+2028
    # and U+2029); json.dumps escapes everything outside ASCII, lone surrogates included.
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        req = json.loads(line)
        try:
            answer = {"id": req["id"], "output": offered[req["op"]](req["input"])}
            if coverage is not None and (found := coverage.take()) is not None:
                answer["coverage"] = found
            reply = json.dumps(answer)
            if len(reply) > MAX_ANSWER_BYTES:
                raise ValueError("answer too large")
        except Exception as err:  # a refusal, not a crash
            reply = json.dumps({"id": req["id"], "error": f"{type(err).__name__}: {err}"[:2000]})
        out.write(reply.encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    sys.setrecursionlimit(10_000)  # inputs may nest deeply on purpose
    main()

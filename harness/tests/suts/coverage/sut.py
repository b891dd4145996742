"""A SUT that offers the coverage extension through the shared Python shim's coverage module
(harness/runtimes/lib/shim_coverage.py): `neutralize_text` prefixes lines that start with
`MEDIA:`. Its own protocol loop (json, not pydantic-core): any python3 runs it."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../runtimes/lib"))

from shim_coverage import Coverage  # noqa: E402


def neutralize(text):
    lines = []
    for line in text.split("\n"):
        if line.startswith("MEDIA:"):
            line = "[neutralized] " + line
        lines.append(line)
    return "\n".join(lines)


coverage = Coverage.from_env()
handshake = {"normfuzz": 1, "name": "coverage sut", "ops": ["neutralize_text"]}
if coverage is not None:
    handshake["coverage"] = coverage.offer()
print(json.dumps(handshake), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    answer = {"id": req["id"], "output": {"text": neutralize(req["input"]["text"])}}
    if coverage is not None and (found := coverage.take()) is not None:
        answer["coverage"] = found
    print(json.dumps(answer), flush=True)

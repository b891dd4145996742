#!/usr/bin/env python3
"""A deliberately broken SUT: answers every op with its input unchanged.

It shows what a runtime that forwards tool results and text untouched looks like to normfuzz:
`cargo xtask conform --sut "python3 examples/sut-echo/echo.py"` finds S1 (live MEDIA: lines),
S2 (image blocks without valid data), F4 and provider 400s within seconds.
"""
import json
import sys

OPS = ["coerce_tool_result", "neutralize_text", "check_media_url", "sanitize_tool_names"]
print(json.dumps({"normfuzz": 1, "name": "echo", "ops": OPS}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    out = req["input"]
    if req["op"] == "check_media_url":
        out = {"allowed": True}
    print(json.dumps({"id": req["id"], "output": out}), flush=True)

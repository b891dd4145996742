#!/usr/bin/env python3
"""A SUT with every fault the protocol names: it crashes, hangs or prints garbage on some inputs
and refuses the rest, so the runner must survive, report and restart it."""
import json, os, sys, time

print(json.dumps({"normfuzz": 1, "name": "faulty", "ops": ["neutralize_text"]}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    text = req["input"].get("text", "")
    if "\u2028" in text:
        os._exit(3)
    if "\u0085" in text:
        time.sleep(30)
    if "\x0c" in text:
        print("this is not JSON", flush=True)
        continue
    print(json.dumps({"id": req["id"], "error": "unsupported"}), flush=True)

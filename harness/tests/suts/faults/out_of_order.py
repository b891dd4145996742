"""Holds a FAULT request back and answers the request after it first."""
import json
import sys
import _sut

_sut.write({"normfuzz": 1, "name": "out of order", "ops": ["neutralize_text"]})
held = None
for line in sys.stdin.buffer:
    req = json.loads(line)
    if req["input"].get("text") == "FAULT":
        held = req
        continue
    _sut.echo(req)
    if held is not None:
        _sut.echo(held)
        held = None

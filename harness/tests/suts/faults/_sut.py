"""Shared by the fault SUTs: the handshake, then an echo answer ({"text": ...}) per request
line, except for a request whose input text is "FAULT", which the script's `fault` handles."""
import json
import sys

out = sys.stdout.buffer


def write(obj_or_bytes):
    data = obj_or_bytes if isinstance(obj_or_bytes, bytes) else json.dumps(obj_or_bytes).encode() + b"\n"
    out.write(data)
    out.flush()


def echo(req):
    write({"id": req["id"], "output": {"text": req["input"].get("text", "")}})


def serve(fault, name="fault"):
    write({"normfuzz": 1, "name": name, "ops": ["neutralize_text"]})
    for line in sys.stdin.buffer:
        req = json.loads(line)
        if req["input"].get("text") == "FAULT":
            fault(req)
        else:
            echo(req)

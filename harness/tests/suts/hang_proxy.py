"""A SUT that answers as the reference does (`NORMFUZZ serve-reference`, pipelined) except that it
hangs on some requests: it stops reading and answering, as a normalizer stuck in a loop does.

    python3 hang_proxy.py NORMFUZZ MODE

MODE is one of
    nul          any string of the input holds U+0000 (a C-string bug)
    fraction:P   a fraction P of the cases, chosen by a hash of the input (the same input
                 hangs every time, as a real bug does)
    op:NAME      every case of op NAME
    stop:N       after N requests it stops reading its stdin (and so answering), without exiting
    none         never (the same SUT without the hang, for comparing rates)
"""
import json
import subprocess
import sys
import threading
import time
import zlib


def holds_nul(raw):
    # JSON spells U+0000 only as an escape; the line is read (deep inputs included) only then.
    if b"\\u0000" not in raw:
        return False
    try:
        return walk_nul(json.loads(raw)["input"])
    except RecursionError:
        return True  # nested too deep for Python's json: taken as holding one


def walk_nul(value):
    if isinstance(value, str):
        return "\0" in value
    if isinstance(value, list):
        return any(walk_nul(v) for v in value)
    if isinstance(value, dict):
        return any(walk_nul(k) or walk_nul(v) for k, v in value.items())
    return False


def hangs(mode, raw, seen):
    """Reads the request line as normfuzz writes it: {"id":N,"op":"NAME","input":...}."""
    kind, _, arg = mode.partition(":")
    if kind == "none":
        return False
    if kind == "stop":
        return seen >= int(arg)
    if kind == "nul":
        return holds_nul(raw)
    op_and_input = raw[raw.index(b',"op":') :]
    if kind == "op":
        return op_and_input.startswith(b',"op":"' + arg.encode() + b'"')
    if kind == "fraction":
        # The op and input alone (not the id, which changes when a batch is sent again).
        return zlib.crc32(op_and_input) < float(arg) * 2**32
    sys.exit("unknown mode " + mode)


def main():
    normfuzz, mode = sys.argv[1], sys.argv[2]
    child = subprocess.Popen([normfuzz, "serve-reference"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
    handshake = json.loads(child.stdout.readline())
    handshake["name"] = "hang proxy (" + mode + ")"
    out = sys.stdout.buffer
    out.write(json.dumps(handshake).encode() + b"\n")
    out.flush()

    def answers():
        for line in child.stdout:
            out.write(line)
            out.flush()

    threading.Thread(target=answers, daemon=True).start()
    for seen, raw in enumerate(sys.stdin.buffer):
        if hangs(mode, raw, seen):
            # Neither reads nor answers again; killed by the harness with its process group.
            while True:
                time.sleep(3600)
        child.stdin.write(raw)
        child.stdin.flush()
    child.stdin.close()
    child.wait()


main()

#!/usr/bin/env python3
"""Throughput of the mutant shim: N neutralize_text requests, pipelined (all sent while answers are
read, as normfuzz may do) or in lockstep (one request, one answer).

    python3 examples/mutants/bench.py                     # 5000 requests, pipelined
    python3 examples/mutants/bench.py 5000 --lockstep
    NORMFUZZ_MUTANT=faithful python3 examples/mutants/bench.py
    python3 examples/mutants/bench.py 5000 -- target/ci/normfuzz serve-reference   # any SUT
"""

import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    args = sys.argv[1:]
    cmd = [sys.executable, os.path.join(HERE, "mutant.py")]
    if "--" in args:
        cmd = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    lockstep = "--lockstep" in args
    args = [a for a in args if a != "--lockstep"]
    n = int(args[0]) if args else 5000
    requests = [json.dumps({"id": i, "op": "neutralize_text",
                            "input": {"text": "line %d\nMEDIA:/tmp/x%d.png\nok" % (i, i)}}).encode() + b"\n"
                for i in range(n)]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    proc.stdout.readline()  # handshake
    start = time.perf_counter()
    if lockstep:
        for i, r in enumerate(requests):
            proc.stdin.write(r)
            proc.stdin.flush()
            assert json.loads(proc.stdout.readline())["id"] == i
        proc.stdin.close()
    else:
        def feed():
            for r in requests:
                proc.stdin.write(r)
                proc.stdin.flush()
            proc.stdin.close()
        threading.Thread(target=feed, daemon=True).start()
        for i in range(n):
            assert json.loads(proc.stdout.readline())["id"] == i
    elapsed = time.perf_counter() - start
    proc.wait()
    print("%s, %s: %d requests in %.3f s = %.0f requests/s" % (
        os.environ.get("NORMFUZZ_MUTANT") or "reference pass-through",
        "lockstep" if lockstep else "pipelined", n, elapsed, n / elapsed))


if __name__ == "__main__":
    main()

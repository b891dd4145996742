"""On a FAULT request, writes 256 MiB to stderr as fast as it can, then a last line, then
exits (status 6). With `--answer`, it answers the request instead of exiting."""
import os
import sys
import _sut

ANSWER = "--answer" in sys.argv


def fault(req):
    chunk = b"noise " * (1 << 17)
    for _ in range(256 * (1 << 20) // len(chunk)):
        sys.stderr.buffer.write(chunk)
    sys.stderr.buffer.write(b"\nLAST STDERR LINE\n")
    sys.stderr.flush()
    if ANSWER:
        _sut.echo(req)
    else:
        os._exit(6)


_sut.serve(fault)

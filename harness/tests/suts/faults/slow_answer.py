"""Starts slowly (argv[1] seconds before its handshake, as a runtime with slow imports) and
answers a FAULT request after argv[2] seconds: a slow answer, not a hang."""
import sys
import time
import _sut

time.sleep(float(sys.argv[1]))


def fault(req):
    time.sleep(float(sys.argv[2]))
    _sut.echo(req)


_sut.serve(fault)

"""Sleeps before its handshake, as a runtime with slow imports does (seconds: argv[1])."""
import sys
import time
import _sut

time.sleep(float(sys.argv[1]))
_sut.serve(lambda req: _sut.echo(req))

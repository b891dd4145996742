"""Exits before its handshake, saying why on stderr. With a state file argument it starts
normally the first time, exits on a FAULT request, and exits before the handshake on restart."""
import os
import sys

if len(sys.argv) > 1 and not os.path.exists(sys.argv[1]):
    open(sys.argv[1], "w").close()
    import _sut
    _sut.serve(lambda req: os._exit(3))
sys.stderr.write("fatal: no configuration found\n")
sys.exit(3)

"""Ignores SIGTERM; on a FAULT request, and when its stdin closes, it sleeps instead of
answering or exiting. Its pid goes to the file named by the first argument."""
import os
import signal
import sys
import time
import _sut

signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
_sut.serve(lambda req: time.sleep(600))
time.sleep(600)

"""On a FAULT request, starts a grandchild that keeps stdin, stdout and stderr open (its pid
written to the file named by the first argument), then exits (status 7) without answering."""
import os
import subprocess
import sys
import _sut


def fault(req):
    child = subprocess.Popen(["sleep", "600"])
    with open(sys.argv[1], "w") as f:
        f.write(str(child.pid))
    os._exit(7)


_sut.serve(fault)

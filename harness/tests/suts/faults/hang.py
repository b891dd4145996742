"""On a FAULT request, stops: neither reads nor answers again (a normalizer stuck in a loop)."""
import time
import _sut


def fault(req):
    while True:
        time.sleep(3600)


_sut.serve(fault)

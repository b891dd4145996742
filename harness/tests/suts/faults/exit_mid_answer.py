"""Exits (status 4) on a FAULT request without answering it, with more requests pending."""
import os
import sys
import _sut


def fault(req):
    sys.stderr.write("giving up on request %d\n" % req["id"])
    sys.stderr.flush()
    os._exit(4)


_sut.serve(fault)

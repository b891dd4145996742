"""Writes half an answer line for a FAULT request, then exits (status 5)."""
import os
import _sut


def fault(req):
    _sut.write(b'{"id": %d, "output": {"te' % req["id"])
    os._exit(5)


_sut.serve(fault)

"""On a FAULT request, sleeps past the timeout, then writes an answer that would pass for the
answer to the next request (its id, the text "LATE"), and goes on."""
import time
import _sut


def fault(req):
    time.sleep(1.0)
    _sut.write({"id": req["id"] + 1, "output": {"text": "LATE"}})


_sut.serve(fault)

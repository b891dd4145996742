"""On a FAULT request, writes 2 GB without a newline to stdout as fast as it can."""
import _sut


def fault(req):
    chunk = b"x" * (1 << 20)
    for _ in range(2048):
        _sut.out.write(chunk)
    _sut.out.flush()


_sut.serve(fault)

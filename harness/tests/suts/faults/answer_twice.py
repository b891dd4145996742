"""Answers a FAULT request twice."""
import _sut


def fault(req):
    _sut.echo(req)
    _sut.echo(req)


_sut.serve(fault)

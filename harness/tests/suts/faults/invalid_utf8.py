"""Answers a FAULT request with a line that is not UTF-8 (otherwise valid JSON)."""
import _sut

_sut.serve(lambda req: _sut.write(b'{"id": %d, "output": {"text": "\xff\xfe"}}\n' % req["id"]))

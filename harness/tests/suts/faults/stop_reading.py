"""Answers its first request, then stops reading its stdin without exiting: the harness's
writes block once the pipe is full, and nothing more is answered."""
import json
import sys
import time
import _sut

_sut.write({"normfuzz": 1, "name": "stop reading", "ops": ["neutralize_text"]})
_sut.echo(json.loads(sys.stdin.buffer.readline()))
while True:
    time.sleep(3600)

"""A SUT on the shared Python shim loop (harness/runtimes/lib/shim.py) whose interpreter teardown
takes 3 s (an exit handler sleeps, as a large runtime's module teardown takes long): `leave()`
skips it. `neutralize_text` echoes the text."""

import atexit
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../runtimes/lib"))

from shim import leave, serve  # noqa: E402


async def echo(value):
    return {"text": value["text"]}


atexit.register(time.sleep, 3)
serve("leave sut", {"neutralize_text": echo})
leave()

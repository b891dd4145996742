"""A SUT on the shared Python shim loop (harness/runtimes/lib/shim.py) that tells how the loop
leaves the garbage collector: off while the runtime is imported (from `import shim` to the
handshake), then on, with what the imports left frozen, while the cases run. `neutralize_text`
answers "imports: <on|off>, cases: <on|off>, frozen: <True|False>"."""

import gc
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../runtimes/lib"))

from shim import leave, serve  # noqa: E402

IMPORTS = gc.isenabled()  # as the runtime's imports find it, after `import shim`


def on(enabled):
    return "on" if enabled else "off"


async def state(value):
    frozen = gc.get_freeze_count() > 0
    return {"text": f"imports: {on(IMPORTS)}, cases: {on(gc.isenabled())}, frozen: {frozen}"}


serve("gc start-up sut", {"neutralize_text": state})
leave()

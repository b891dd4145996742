"""What every Python protocol shim of the runtime matrix shares: the SUT protocol loop
(docs/spec/sut-protocol.md) and the MCP SDK's own validation of a `tools/call` result.

Requests are read from the binary stdin, which splits at b"\\n" only (`str.splitlines` would also
split at U+0085, U+2028 and U+2029). Answers are UTF-8 JSON written by pydantic-core (a JSON text
has no raw newline, and the harness splits answers at b"\\n" only): about 2.5 times faster than
`json.dumps` on the multi-megabyte answers campaigns produce, which was a quarter of a Python
shim's time.

Start-up: every Python shim imports this module first, and it turns the cyclic garbage collector
off until `serve` writes the handshake. Importing a runtime builds some 150,000 objects
(pydantic models, dataclasses, typing forms), and the collections their allocation triggers
rescan them again and again, finding next to nothing (about a tenth of the start-up's CPU).
`serve` then moves everything the imports left into the permanent generation (`gc.freeze`), so
no later collection rescans it either, and turns the collector back on: the cases run with it on,
as in any process of the runtime. What the shim imports and runs is the same.
"""

import asyncio
import contextlib
import gc
import json
import os
import re
import sys

gc.disable()  # until `serve`: the runtime's imports (see above)

from pydantic_core import PydanticSerializationError, to_json  # noqa: E402
from pydantic_core import from_json as parse_json  # noqa: E402  (the MCP SDK's message parser)

from shim_coverage import Coverage  # noqa: E402


class Refused(Exception):
    """The runtime refuses the result (it raises out of the tool call instead of coercing it)."""


def error_text(err: BaseException) -> str:
    text = f"{type(err).__name__}: {err}"
    return text if len(text) <= 2000 else text[:2000] + "..."


class Unparsable:
    """A request the MCP SDK's message parser refuses (nesting past pydantic-core's limit)."""

    def __init__(self, reason: str):
        self.reason = reason


def wire_result(value):
    """The case as a JSON-RPC result the MCP SDK's session reads, or `Refused` for one it never
    hands on: a message its parser refuses, or a result that is not an object, is dropped and the
    call never returns."""
    if isinstance(value, Unparsable):
        raise Refused(f"the MCP SDK's parser drops the message: {value.reason}")
    if not isinstance(value, dict):
        raise Refused("the MCP session drops a JSON-RPC result that is not an object")
    return value


def validate_call_tool_result(value):
    """`mcp.types.CallToolResult` from the wire JSON, as `ClientSession.call_tool` builds it.

    A value the SDK refuses raises `Refused`: the session raises it out of `call_tool` (or, for a
    message it cannot parse, never answers the call), so no runtime built on the SDK sees it.
    """
    from mcp import types

    value = wire_result(value)
    try:
        return types.CallToolResult.model_validate(value)
    except Exception as err:  # pydantic.ValidationError, RecursionError
        raise Refused(f"MCP SDK refused the result: {error_text(err)}") from err


def leave() -> None:
    """Exits at once, once `serve` returned (stdin closed): the interpreter's teardown of the
    runtime's modules (0.4 to 0.5 s of CPU for pydantic-ai's) would only delay the campaign, which
    waits for the exit. Every answer was flushed as it was written."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def start_collecting() -> None:
    """Ends the start-up: what the imports left is frozen out of every later collection, and the
    collector (off since this module was imported) is on again."""
    gc.freeze()
    gc.enable()


def serve(name: str, handlers: dict, connect=None) -> None:
    """Writes the handshake, then answers each request in order with `await handlers[op](input)`.

    An exception becomes an `error` answer: the runtime raised instead of answering. With
    NORMFUZZ_COVERAGE set the handshake offers the coverage extension and each answer carries
    the coverage it added (shim_coverage.py). `connect`, when given, is an async context manager
    entered once before the first request and held while requests are answered (the runtime's
    MCP client session, reused across cases): all requests run in its one task, as anyio's task
    groups and cancel scopes require.
    """
    out = sys.stdout.buffer
    coverage = Coverage.from_env()
    start_collecting()
    handshake = {"normfuzz": 1, "name": name, "ops": list(handlers)}
    if coverage is not None:
        handshake["coverage"] = coverage.offer()
    out.write(to_json(handshake) + b"\n")
    out.flush()

    async def answer_all():
        async with connect or contextlib.nullcontext():
            for req in requests(sys.stdin.buffer):
                try:
                    answer = {"id": req["id"], "output": await handlers[req["op"]](req["input"])}
                except Exception as err:
                    answer = {"id": req["id"], "error": error_text(err)}
                if coverage is not None and (found := coverage.take()) is not None:
                    answer["coverage"] = found
                try:
                    line = to_json(answer)
                except PydanticSerializationError:
                    # What pydantic-core refuses (a lone surrogate in a runtime's text): escaped
                    # by json.
                    line = json.dumps(answer).encode()
                out.write(line + b"\n")
                out.flush()

    asyncio.new_event_loop().run_until_complete(answer_all())


def requests(stdin):
    """The requests read from stdin, one a line, until it ends."""
    while line := stdin.readline():
        if not line.strip():
            continue
        try:
            req = parse_json(line)
        except ValueError as err:
            # The MCP SDK reads each message with pydantic-core's parser
            # (`JSONRPCMessage.model_validate_json` in mcp/client/stdio), which refuses nesting
            # deeper than its recursion limit: the message is dropped and the call never
            # returns. The request is read with the same parser; the shim hands the runtime
            # what the SDK would (see `wire_result`). Id and op come first.
            match = re.match(rb'\s*\{\s*"id"\s*:\s*(\d+)\s*,\s*"op"\s*:\s*"(\w+)"', line)
            if match is None or "recursion limit" not in str(err):
                raise
            req = {
                "id": int(match.group(1)),
                "op": match.group(2).decode(),
                "input": Unparsable(str(err)),
            }
        yield req

"""The SUT protocol's coverage extension (docs/spec/sut-protocol.md, "Coverage"), for Python shims.

normfuzz names what to measure in the environment variable NORMFUZZ_COVERAGE (or the shim, in
`Coverage.from_env`'s argument, when it is unset): one scope per line (or comma), `<file glob>`
or `<file glob>:<qualified function name>`, the glob matched against the end of a module's path
(`pydantic_ai/mcp.py:_map_mcp_call_tool_result`). Without one nothing is measured and the
handshake offers nothing.

Lines are the code objects' own (`co_lines`; entering a function reaches its first line); a
branch is a line-to-line arc out of a conditional jump (`dis`), named "<from>><to>". On Python
3.12+ `sys.monitoring` reports LINE and BRANCH events and each location is disabled (`DISABLE`)
once it has told all it can, so code that ran before costs nothing again; older Pythons fall
back to `sys.settrace`, which traces only the frames of the units' functions. Arcs within one
line are left out: a line tracer cannot see them.

Usage: `cov = Coverage.from_env()` once the runtime is imported; `cov.offer()` goes into the
handshake, `cov.take()` into each answer (what is new since the previous call, or None).
"""

import dis
import importlib.machinery
import os
import re
import sys

VERSION = 1


def _scopes(spec):
    for item in spec.replace(",", "\n").splitlines():
        item = item.strip()
        if item:
            file, _, function = item.partition(":")
            yield file, function or None


def _code_objects(code):
    yield code
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            yield from _code_objects(const)


def _key(code):
    """What tells a loaded code object and the one compiled from its source apart from others."""
    return code.co_filename, code.co_firstlineno, code.co_name


def _within(code, function):
    """`code` is the function named `function` or nested in it (any code for no function)."""
    name = getattr(code, "co_qualname", code.co_name)  # co_qualname: Python 3.11+
    return function is None or name == function or name.startswith(function + ".")


def _line_of(code):
    """Offset -> line of `code`'s instructions (None for artificial ones)."""
    lines = {}
    for start, end, line in code.co_lines():
        for offset in range(start, end, 2):
            lines[offset] = line
    return lines


def _arcs(code):
    """The line arcs out of `code`'s conditional jumps: both outcomes of each."""
    lines = _line_of(code)
    arcs = set()
    instructions = list(dis.get_instructions(code))  # inline caches left out
    for ins, after in zip(instructions, instructions[1:]):
        if "IF" not in ins.opname and ins.opname != "FOR_ITER":
            continue
        src = lines.get(ins.offset)
        for dest in (ins.argval, after.offset):
            to = lines.get(dest) if isinstance(dest, int) else None
            if src is not None and to is not None and to != src:
                arcs.add((src, to))
    return arcs


class Unit:
    """One named scope in one file: its lines and branch arcs, and what ran of them."""

    def __init__(self, name, file, codes):
        self.name, self.file = name, file
        self.codes = {_key(code) for code in codes}
        self.lines = set()
        self.arcs = set()
        for code in codes:
            self.lines.update(line for _, _, line in code.co_lines() if line is not None)
            self.arcs |= _arcs(code)


class Coverage:
    def __init__(self, units):
        self.units = units
        # (file, line) -> unit index; (file, from, to) -> unit index.
        self.line_unit = {}
        self.arc_unit = {}
        for i, unit in enumerate(units):
            for line in unit.lines:
                self.line_unit.setdefault((unit.file, line), i)
            for src, to in unit.arcs:
                self.arc_unit.setdefault((unit.file, src, to), i)
        self.files = {unit.file for unit in units}
        self.codes = set().union(*(unit.codes for unit in units))
        self.new_lines = set()
        self.new_arcs = set()
        self.seen_lines = set()
        self.seen_arcs = set()

    @classmethod
    def from_env(cls, fallback=""):
        """Measures the scopes NORMFUZZ_COVERAGE (else `fallback`, a shim's own scopes) names in
        the modules loaded by now; None when neither names any."""
        spec = os.environ.get("NORMFUZZ_COVERAGE", "").strip() or fallback
        if not spec.strip():
            return None
        units = []
        compiled = {}  # file -> its code objects, compiled once for all its scopes
        for pattern, function in _scopes(spec):
            for file in _loaded_files(pattern):
                if file not in compiled:
                    compiled[file] = list(_code_objects(_module_code(file)))
                codes = [c for c in compiled[file] if _within(c, function)]
                if codes:
                    name = f"{os.path.basename(file)}:{function}" if function else os.path.basename(file)
                    units.append(Unit(name, file, codes))
        if not units:
            sys.stderr.write(f"NORMFUZZ_COVERAGE names nothing loaded: {spec!r}\n")
            return None
        cov = cls(units)
        cov._start()
        return cov

    def offer(self):
        return {
            "version": VERSION,
            "units": [
                {"name": u.name, "file": u.file, "lines": sorted(u.lines), "branches": len(u.arcs)}
                for u in self.units
            ],
        }

    def take(self):
        """The lines and branches first reached since the last call, per unit index; None if none."""
        if not self.new_lines and not self.new_arcs:
            return None
        found = {}
        for file, line in self.new_lines:
            entry = found.setdefault(str(self.line_unit[(file, line)]), {"lines": [], "branches": []})
            entry["lines"].append(line)
        for entry in found.values():
            entry["lines"].sort()
        for file, src, to in self.new_arcs:
            entry = found.setdefault(str(self.arc_unit[(file, src, to)]), {"lines": [], "branches": []})
            entry["branches"].append(f"{src}>{to}")
        self.new_lines.clear()
        self.new_arcs.clear()
        return found

    def _line(self, file, line):
        key = (file, line)
        if key in self.line_unit and key not in self.seen_lines:
            self.seen_lines.add(key)
            self.new_lines.add(key)

    def _arc(self, file, src, to):
        key = (file, src, to)
        if key in self.arc_unit and key not in self.seen_arcs:
            self.seen_arcs.add(key)
            self.new_arcs.add(key)

    def _start(self):
        if hasattr(sys, "monitoring"):
            self._start_monitoring()
        else:
            sys.settrace(self._global_trace)

    # Python 3.12+: sys.monitoring, each location disabled once it has nothing new to say.
    def _start_monitoring(self):
        mon = sys.monitoring
        tool = mon.COVERAGE_ID
        mon.use_tool_id(tool, "normfuzz")
        lines_of = {}  # code -> offset -> line
        disable = mon.DISABLE

        def on_start(code, offset):
            if code.co_filename in self.files:
                self._line(code.co_filename, code.co_firstlineno)
            return disable

        def on_line(code, line):
            if code.co_filename in self.files:
                self._line(code.co_filename, line)
            return disable

        # A conditional jump is disabled once both outcomes were seen (3.12 and 3.13 have one
        # event for both; 3.14's BRANCH_LEFT and BRANCH_RIGHT are disabled one by one).
        outcomes = {}

        def on_branch(code, src, dest):
            if code.co_filename not in self.files:
                return disable
            lines = lines_of.get(code) or lines_of.setdefault(code, _line_of(code))
            self._arc(code.co_filename, lines.get(src), lines.get(dest))
            if split:
                return disable
            seen = outcomes.setdefault((code, src), set())
            seen.add(dest)
            return disable if len(seen) == 2 else None

        events = mon.events
        split = hasattr(events, "BRANCH_LEFT")
        branch_events = events.BRANCH_LEFT | events.BRANCH_RIGHT if split else events.BRANCH
        mon.register_callback(tool, events.PY_START, on_start)
        mon.register_callback(tool, events.LINE, on_line)
        for event in (events.BRANCH_LEFT, events.BRANCH_RIGHT) if split else (events.BRANCH,):
            mon.register_callback(tool, event, on_branch)
        mon.set_events(tool, events.PY_START | events.LINE | branch_events)

    # Older Pythons: a line tracer on the frames of the units' own functions only (a file's
    # other functions run untraced); an arc is two lines in a row of one frame.
    def _global_trace(self, frame, event, arg):
        if _key(frame.f_code) not in self.codes:
            return None
        file = frame.f_code.co_filename
        # The entry counts as the first line (`co_firstlineno`: the `def`, or its decorator).
        self._line(file, frame.f_code.co_firstlineno)
        last = [None]

        def local(frame, event, arg):
            if event == "line":
                line = frame.f_lineno
                self._line(file, line)
                if last[0] is not None:
                    self._arc(file, last[0], line)
                last[0] = line
            return local

        return local


def _module_code(file):
    """The code `file` compiles to, as its import loaded it: from its bytecode cache when that
    matches the source (what the loader checks on import), else compiled from the source. The
    same code objects either way, without compiling the whole file at each start (pydantic-ai's
    coverage set-up, two large files: 65 -> 17 ms of CPU)."""
    name = "_normfuzz_coverage"  # the loader's module name: only in its error messages
    return importlib.machinery.SourceFileLoader(name, file).get_code(name)


def _loaded_files(pattern):
    """The loaded modules' files whose path ends with `pattern` (`*` within one segment)."""
    parts = (re.escape(part) for part in pattern.lstrip("/").split("*"))
    tail = re.compile("(^|/)" + "[^/]*".join(parts) + "$")
    files = set()
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and file.endswith(".py") and tail.search(file):
            files.add(file)
    return sorted(files)

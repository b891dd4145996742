#!/usr/bin/env python3
"""mutant.py: a system under test (SUT protocol v1, docs/spec/sut-protocol.md) with one
realistic bug per variant.

The shim starts the reference normalizer (`$NORMFUZZ_BIN serve-reference`, default
`target/ci/normfuzz` under the repository root), forwards every request to it in a pipeline and
applies the bug of the variant named by `NORMFUZZ_MUTANT` to the answer: it edits the answer, asks the
reference about a changed input, or answers itself, whichever models the bug best. Each variant is
the reference with ONE mistake that a runtime author writing from the spec could make; the table
`VARIANTS` at the end names the rule each one breaks. `NORMFUZZ_MUTANT=a+b` puts two bugs in: b
rewrites what a answered (`apply`), so a baseline drafted on a alone can be shown to miss b.

    NORMFUZZ_MUTANT=s1_ascii_blank_only normfuzz conform --sut "python3 examples/mutants/mutant.py"
    python3 examples/mutants/mutant.py --list      # the table, one JSON object per line

Without `NORMFUZZ_MUTANT` the shim passes the reference through unchanged. `faithful` is the
reference plus stricter choices the spec allows (more lines neutralized, more URLs refused) and must
break no rule. P1 and P3 have no op in the protocol, so no variant can break them.
"""

import base64
import ipaddress
import json
import os
import re
import subprocess
import sys
import threading
import traceback
import unicodedata
import urllib.parse
from queue import SimpleQueue
from typing import Callable, NamedTuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OPS = ["coerce_tool_result", "neutralize_text", "check_media_url", "parse_reply",
       "normalize_stream", "resolve_retry_images", "sanitize_tool_names"]

MARKER = "[neutralized] "
ALLOWED_IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp")
MAX_B64_LEN = 5_242_880

# ---------------------------------------------------------------------------------------------
# The reference child
# ---------------------------------------------------------------------------------------------


def reference_command():
    binary = os.environ.get("NORMFUZZ_BIN") or "target/ci/normfuzz"
    if not os.path.isabs(binary):
        binary = os.path.join(REPO, binary)
    return [binary, "serve-reference"]


class Reference:
    """A `serve-reference` child process speaking the SUT protocol."""

    def __init__(self):
        cmd = reference_command()
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        except OSError as e:
            raise SystemExit("mutant.py: cannot start the reference %s: %s (set NORMFUZZ_BIN)"
                             % (" ".join(cmd), e))
        handshake = self.proc.stdout.readline()
        if json.loads(handshake or b"{}").get("normfuzz") != 1:
            raise RuntimeError("the reference sent no handshake")

    def send(self, raw: bytes):
        self.proc.stdin.write(raw if raw.endswith(b"\n") else raw + b"\n")
        self.proc.stdin.flush()

    def recv(self) -> bytes:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the reference exited")
        return line

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=2)
        except Exception:
            self.proc.kill()


_helper = None
_helper_lock = threading.Lock()


def ref(op, inp):
    """The reference's output for (op, inp), or None when it answers an error (synchronous, on a
    second child so that the pipelined one keeps its order)."""
    global _helper
    with _helper_lock:
        if _helper is None:
            _helper = Reference()
        _helper.send(json.dumps({"id": 0, "op": op, "input": inp}).encode())
        return json.loads(_helper.recv()).get("output")


# ---------------------------------------------------------------------------------------------
# One request in flight
# ---------------------------------------------------------------------------------------------

UNPARSED = object()
OP_RE = re.compile(rb'"op"\s*:\s*"([a-z_]+)"')
ID_RE = re.compile(rb'"id"\s*:\s*(\d+)')


class Err(str):
    """A variant's answer that is a protocol `error` instead of an `output`."""


class Call:
    """A request and, once read, the reference's answer to it."""

    __slots__ = ("id", "op", "inp", "parse_error", "answer_raw", "_answer", "earlier")

    def __init__(self, raw: bytes):
        self.answer_raw = None
        self._answer = None
        self.earlier = None
        self.parse_error = None
        try:
            req = json.loads(raw)
            self.id, self.op, self.inp = req["id"], req["op"], req["input"]
        except (ValueError, RecursionError, TypeError, KeyError) as e:  # e.g. nested too deep
            self.parse_error = e
            self.inp = UNPARSED
            m, n = OP_RE.search(raw), ID_RE.search(raw)
            self.op = m.group(1).decode() if m else None
            self.id = int(n.group(1)) if n else None

    @property
    def answer(self):
        if self._answer is None:
            self._answer = json.loads(self.answer_raw)
        return self._answer

    @property
    def output(self):
        return self.answer.get("output")

    def with_answer(self, result):
        """This request answered with `result`: what the second variant of a pair sees."""
        c = Call.__new__(Call)
        c.id, c.op, c.inp, c.parse_error = self.id, self.op, self.inp, self.parse_error
        c.answer_raw, c._answer = encode_answer(self, result), None
        c.earlier = self.earlier or self
        return c


# ---------------------------------------------------------------------------------------------
# Text helpers (S1 notions as the spec states them)
# ---------------------------------------------------------------------------------------------

TERMINATORS = "\n\x0b\x0c\r\x1c\x1d\x1e\x85\u2028\u2029"
TERMINATOR_SPLIT = re.compile("([" + TERMINATORS + "])")
COLON_LIKE = ":\u2a74\ufe13\ufe55\uff1a"
JS_SPACE = set("\t\n\x0b\x0c\r \xa0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff") | {
    chr(c) for c in range(0x2000, 0x200B)}
IGNORABLE_RANGES = [
    (0xAD, 0xAD), (0x34F, 0x34F), (0x61C, 0x61C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF)]


def is_ignorable(ch):
    o = ord(ch)
    return any(lo <= o <= hi for lo, hi in IGNORABLE_RANGES)


def is_blank(ch):
    return ch.isspace() or is_ignorable(ch)


def is_ws(ch):
    """Unicode White_Space (Rust `trim`): Python's isspace without U+001C..U+001F."""
    return ch.isspace() and ch not in "\x1c\x1d\x1e\x1f"


def line_start(text, pos):
    return max(text.rfind(t, 0, pos) for t in TERMINATORS) + 1


def marker_positions(src, out):
    """Offsets in `src` before which the reference inserted MARKER to produce `out` (None when
    `out` is not `src` with markers inserted). The reference inserts before an M-like letter,
    never before a `[`, so a MARKER already present in `src` is told apart by what follows."""
    if not isinstance(src, str) or not isinstance(out, str) or len(out) < len(src):
        return None
    n, pos, i, j = len(MARKER), [], 0, 0
    while len(out) - j != len(src) - i:
        k = out.find(MARKER, j)
        if k < 0:
            return None
        seg = k - j
        if src[i:i + seg] != out[j:k]:
            return None
        if src.startswith(MARKER, i + seg):
            i, j = i + seg + n, k + n
        else:
            pos.append(i + seg)
            i, j = i + seg, k + n
    return pos if src[i:] == out[j:] else None


def with_markers(src, positions):
    pieces, last = [], 0
    for p in positions:
        pieces += [src[last:p], MARKER]
        last = p
    pieces.append(src[last:])
    return "".join(pieces)


def directive_word(src, pos):
    """(word, colon) of the directive starting at `pos`: the letters before the first colon."""
    ends = [k for k in (src.find(c, pos, pos + 64) for c in COLON_LIKE) if k >= 0]
    if not ends:
        return src[pos:pos + 5], ""
    k = min(ends)
    return src[pos:k], src[k]


def leak_transform(leaks):
    """A text transform that drops the reference's marker where `leaks(src, pos, index)` says
    the buggy neutralizer would not have seen the directive."""
    def transform(src, out):
        positions = marker_positions(src, out)
        if not positions:
            return None
        kept = [p for k, p in enumerate(positions) if not leaks(src, p, k)]
        return None if len(kept) == len(positions) else with_markers(src, kept)
    return transform


def split_lines(text):
    """[line, terminator, line, terminator, ..., line] with the S1 line terminators."""
    return TERMINATOR_SPLIT.split(text)


# ---------------------------------------------------------------------------------------------
# Coercion helpers
# ---------------------------------------------------------------------------------------------

KNOWN_BLOCK_TYPES = {"text", "image", "audio", "resource_link", "resource"}
B64_RE = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def text_block(text):
    return {"type": "text", "text": text}


def image_block(data, mime):
    return {"type": "image", "data": data, "mimeType": mime}


def is_blank_text_block(b):
    return (isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
            and all(is_ws(ch) for ch in b["text"]))


def aligned(c):
    """[(input block, output block index)] when the output has one block per non-blank input
    block (F3), else None."""
    inp, out = c.inp, c.output
    if not (isinstance(inp, dict) and isinstance(inp.get("content"), list)
            and isinstance(out, dict) and isinstance(out.get("content"), list)):
        return None
    kept = [b for b in inp["content"] if not is_blank_text_block(b)]
    if len(kept) != len(out["content"]):
        return None
    return list(zip(kept, range(len(kept))))


def canonical_b64(s):
    if not isinstance(s, str) or not s or len(s) % 4 or not B64_RE.fullmatch(s):
        return None
    try:
        raw = base64.b64decode(s, validate=True)
    except ValueError:
        return None
    return raw if base64.b64encode(raw).decode() == s else None


def sniff(raw):
    if raw.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if raw.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    if raw[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    return None


def valid_image_of(data, mime):
    """Decoded bytes when `data` is canonical base64 of an image of type `mime`."""
    raw = canonical_b64(data)
    return raw if raw is not None and sniff(raw) == mime else None


def block_hook(pick, from_input=False):
    """coerce_tool_result: replace the output block of each input block for which
    `pick(input block, reference output block)` returns a list of blocks. `from_input`: `pick`
    builds the block from the input block alone; as the second variant of a pair it then leaves
    a block the first one changed (it would drop the first's bug)."""
    def fn(c):
        if c.op != "coerce_tool_result" or c.inp is UNPARSED:
            return None
        pairs = aligned(c)
        if not pairs:
            return None
        out = c.output
        before = c.earlier.output if from_input and c.earlier is not None else None
        ref_blocks = before.get("content") if isinstance(before, dict) else None
        content, changed = [], False
        for block, k in pairs:
            ob = out["content"][k]
            if ref_blocks is not None and (len(ref_blocks) != len(out["content"])
                                           or ref_blocks[k] != ob):
                repl = None
            else:
                repl = pick(block, ob) if isinstance(block, dict) else None
            if repl is None:
                content.append(ob)
            else:
                content += repl
                changed = True
        return {"content": content, "isError": out["isError"]} if changed else None
    return fn


def text_variant(transform):
    """A neutralizer bug: `transform(source text, reference text) -> buggy text or None`,
    applied to neutralize_text and to the text and resource blocks of coerce_tool_result."""
    def coerce_pick(block, ob):
        if ob.get("type") != "text":
            return None
        src = source_text(block)
        new = transform(src, ob["text"]) if src is not None else None
        return None if new is None else [text_block(new)]
    coerce = block_hook(coerce_pick)

    def fn(c):
        if c.op == "neutralize_text":
            if not (isinstance(c.inp, dict) and isinstance(c.inp.get("text"), str)
                    and isinstance(c.output, dict) and isinstance(c.output.get("text"), str)):
                return None
            new = transform(c.inp["text"], c.output["text"])
            return None if new is None else {"text": new}
        return coerce(c)
    return fn


def source_text(block):
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return block["text"]
    res = block.get("resource")
    if block.get("type") == "resource" and isinstance(res, dict) and isinstance(res.get("text"), str):
        return res["text"]
    return None


# ---------------------------------------------------------------------------------------------
# URL and media-line helpers
# ---------------------------------------------------------------------------------------------

DIRECTIVE_RE = re.compile(r"^([ \t]*MEDIA:[ \t]*)(\S+)([ \t\r]*)$", re.I)
SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


def looks_remote(target):
    return bool(SCHEME_RE.match(target)) and "://" in target


def host_of(url):
    try:
        return urllib.parse.urlsplit(url).hostname
    except ValueError:
        return None


def whatwg_ipv4(host):
    """The IPv4 address a WHATWG parser reads in `host` (percent-decoded, NFKC, 1-4 parts,
    decimal/octal/hex), or None."""
    if not host:
        return None
    host = unicodedata.normalize("NFKC", urllib.parse.unquote(host)).lower()
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if not 1 <= len(parts) <= 4:
        return None
    nums = []
    for p in parts:
        try:
            if p[:2] == "0x":
                nums.append(int(p[2:] or "0", 16))
            elif len(p) > 1 and p[0] == "0":
                nums.append(int(p, 8))
            else:
                nums.append(int(p, 10) if p.isdigit() and p.isascii() else int("x"))
        except ValueError:
            return None
    if any(n > 255 for n in nums[:-1]) or nums[-1] >= 256 ** (5 - len(nums)):
        return None
    value = nums[-1] + sum(n << (8 * (3 - i)) for i, n in enumerate(nums[:-1]))
    return ipaddress.IPv4Address(value)


def ipv6_host(url):
    try:
        netloc = urllib.parse.urlsplit(url).netloc
    except ValueError:
        return None
    m = re.search(r"\[([^\]]+)\]", netloc)
    if not m:
        return None
    try:
        return ipaddress.IPv6Address(m.group(1))
    except ValueError:
        return None


def ref_rejects_target(target, roots):
    out = ref("parse_reply", {"text": "MEDIA:" + target, "roots": roots})
    return bool(out) and out.get("rejectedMedia", 0) >= 1 and not out.get("mediaUrls")


def substitute_targets(text, pick):
    """Replace the target of each plain `MEDIA:<target>` line for which `pick(target)` returns a
    value by a surrogate public https URL (which the reference accepts, orders and dedupes like
    any other); returns the new text and {surrogate: value to deliver}."""
    lines, mapping, by_target = text.split("\n"), {}, {}
    for i, line in enumerate(lines):
        m = DIRECTIVE_RE.match(line)
        if not m:
            continue
        target = m.group(2)
        if target not in by_target:
            value = pick(target)
            if value is None:
                continue
            surrogate = "https://nfz-mutant-surrogate-%d.net/m" % len(mapping)
            mapping[surrogate] = value
            by_target[target] = surrogate
        lines[i] = m.group(1) + by_target[target] + m.group(3)
    return "\n".join(lines), mapping


def reply_accepts(pick):
    """parse_reply and the final reply of normalize_stream with a buggy target check:
    `pick(target, roots)` returns what the buggy runtime delivers for a target the reference
    rejects, or None."""
    def fn(c):
        inp = c.inp
        if c.op not in ("parse_reply", "normalize_stream") or not isinstance(inp, dict):
            return None
        roots = inp.get("roots") if isinstance(inp.get("roots"), list) else []
        field = "text" if c.op == "parse_reply" else "final"
        if not isinstance(inp.get(field), str) or "MEDIA" not in inp[field].upper():
            return None
        def buggy(target):
            value = pick(target, roots)
            return value if value is not None and ref_rejects_target(target, roots) else None
        new_text, mapping = substitute_targets(inp[field], buggy)
        if not mapping:
            return None
        out = ref(c.op, dict(inp, **{field: new_text}))
        if out is None:
            return None
        if c.op == "parse_reply":
            out["mediaUrls"] = [mapping.get(u, u) for u in out["mediaUrls"]]
        else:
            for d in out["deliveries"]:
                d["mediaUrls"] = [mapping.get(u, u) for u in d["mediaUrls"]]
        return out
    return fn


def url_variant(allows):
    """A URL-policy bug: `allows(url, reference verdict)` says the buggy check lets `url` through.
    It shows in check_media_url and in the media lines of parse_reply / normalize_stream."""
    def pick(target, roots):
        if not looks_remote(target):
            return None
        verdict = ref("check_media_url", {"url": target})
        return target if verdict and not verdict["allowed"] and allows(target, verdict) else None
    reply = reply_accepts(pick)

    def fn(c):
        if c.op == "check_media_url":
            if not (isinstance(c.inp, dict) and isinstance(c.inp.get("url"), str)):
                return None
            verdict = c.output
            if verdict and not verdict["allowed"] and allows(c.inp["url"], verdict):
                return {"allowed": True, "reason": "ok"}
            return None
        return reply(c)
    return fn


def final_delivery_count(inp):
    """How many trailing deliveries of normalize_stream come from the final reply."""
    final = inp.get("final")
    if not isinstance(final, str):
        return 0
    out = ref("normalize_stream", {"chunks": [], "final": final, "roots": inp.get("roots") or []})
    return len(out["deliveries"]) if out else 0


# ---------------------------------------------------------------------------------------------
# Fallback-retry helpers
# ---------------------------------------------------------------------------------------------

FAILURES = (None, "format", "rate_limit", "timeout", "auth", "overloaded", "unknown")


def retry_request(inp):
    """(attempt, failure, primary, candidate, images) for a well-formed request, else None."""
    if not isinstance(inp, dict):
        return None
    a, f = inp.get("attempt"), inp.get("previousFailure")
    p, cand, imgs = inp.get("primaryProvider"), inp.get("candidateProvider"), inp.get("images")
    if (not isinstance(a, int) or isinstance(a, bool) or a < 0 or f not in FAILURES
            or not (p is None or isinstance(p, str)) or not isinstance(cand, str)
            or not (imgs is None or isinstance(imgs, list))):
        return None
    return a, f, p, cand, imgs


def reference_keeps(a, f, p, cand):
    """R1-R5 as the spec states them."""
    if a == 0 and f is None:
        return True                      # R1
    if f == "format":
        return False                     # R2
    if not p:
        return False                     # R4
    return p.lower() == cand.lower()     # R3 / R5


def retry_variant(keeps):
    """A retry-policy bug: `keeps(attempt, failure, primary, candidate)` is the buggy decision."""
    def fn(c):
        if c.op != "resolve_retry_images":
            return None
        req = retry_request(c.inp)
        if req is None or not req[4] or c.output is None:
            return None
        a, f, p, cand, imgs = req
        ref_keeps = reference_keeps(a, f, p, cand)
        if ref_keeps != (c.output.get("images") is not None):
            return None                  # the reference decided otherwise: not this bug's case
        bug_keeps = keeps(a, f, p, cand)
        if bug_keeps == ref_keeps:
            return None
        return {"images": imgs if bug_keeps else None}
    return fn


def sanitize_names(names, cap=20, length=100, keep=r"A-Za-z0-9_\-"):
    drop = re.compile("[^" + keep + "]")
    out = []
    for n in names:
        if not isinstance(n, str):
            continue
        s = drop.sub("", n)[:length]
        if s:
            out.append(s)
        if cap is not None and len(out) == cap:
            break
    return out


def names_variant(**buggy):
    def fn(c):
        if c.op != "sanitize_tool_names" or not isinstance(c.inp, dict):
            return None
        names = c.inp.get("names")
        if not isinstance(names, list) or c.output is None:
            return None
        if sanitize_names(names) != c.output["names"]:
            return None                  # not the case this model describes
        new = sanitize_names(names, **buggy)
        return None if new == c.output["names"] else {"names": new}
    return fn


# =============================================================================================
# The variants. Each function models one bug; the table at the end names them.
# =============================================================================================

# ---- faithful: stricter where the spec allows, nothing else ---------------------------------

def faithful_skippable(ch):
    # Blanks, controls, format characters, punctuation and symbols (`- `, `> `, `* `, `·`, `Ⓜ`):
    # a Markdown list or quote marker, a bullet or an emoji that a renderer or a sanitizer may
    # drop. Not `[`, so a line already carrying MARKER is never matched again (idempotence, B2).
    # Not a character this Python's Unicode does not know (Cn): a newer Unicode may make it a
    # letter (U+1DF25 is one since 15.0; Python 3.11 has 14.0), and a line starting with a letter
    # is no directive to the judge.
    category = unicodedata.category(ch)
    return ch != "[" and category[0] in "CZPS" and category != "Cn"


FAITHFUL_WORD = re.compile(r"MEDIA\s*:")


def faithful_line(line):
    """Where to insert MARKER in a line that merely looks like a directive, or -1."""
    i, n = 0, len(line)
    while i < n and faithful_skippable(line[i]):
        i += 1
    if i == n:
        return -1
    window = "".join(ch for ch in line[i:i + 64] if unicodedata.category(ch) != "Cf")
    return i if FAITHFUL_WORD.match(unicodedata.normalize("NFKC", window).upper()) else -1


def faithful_text(text):
    if not isinstance(text, str) or not any(c in text for c in COLON_LIKE):
        return text
    parts = split_lines(text)
    for k in range(0, len(parts), 2):
        line = parts[k]
        if line and any(c in line for c in COLON_LIKE):
            i = faithful_line(line)
            if i >= 0:
                parts[k] = line[:i] + MARKER + line[i:]
    return "".join(parts)


def faithful_refuses(url):
    """Reason code for a remote URL that faithful refuses although the reference allows it:
    an explicit port other than 443, or a host longer than 100 characters."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if port is not None and port != 443:
        return "port"
    if len(parts.hostname or "") > 100:
        return "host-too-long"
    return None


# A placeholder faithful writes as JSON (Python's json.dumps: every non-ASCII character
# escaped) when it is short: the same information in another form, which the C judges accept.
FAITHFUL_JSON_MAX = 2048
# Where faithful cuts a media type: RFC 6838 (4.2) recommends type and subtype names of at most
# 64 characters, so no real media type loses anything.
FAITHFUL_MIME_MAX = 64


def faithful_mime(mime):
    """A media type bounded and neutralized as a field of its own, before the placeholder is
    composed: its first line gets S1's prefix too (a stricter choice the spec allows)."""
    return faithful_text(mime[:FAITHFUL_MIME_MAX] + ("…" if len(mime) > FAITHFUL_MIME_MAX else ""))


def _faithful_placeholder(block):
    """The JSON placeholder of a resource link (a label that is only blanks dropped) or an audio
    block (its media type bounded), or None."""
    kind = block.get("type")
    if kind == "resource_link" and isinstance(block.get("uri"), str) and block["uri"].strip():
        fields = {k: block[k] for k in ("uri", "name", "title", "mimeType")
                  if isinstance(block.get(k), str)
                  and (k in ("uri", "mimeType") or block[k].strip())}
    elif kind == "audio" and isinstance(block.get("mimeType"), str):
        fields = {"mimeType": faithful_mime(block["mimeType"])}
    else:
        return None
    text = json.dumps(dict(type=kind, **fields))
    return text if len(text) <= FAITHFUL_JSON_MAX else None


def _faithful_image_placeholder(block, ob):
    """C2's placeholder with the media type bounded and neutralized on its own, then S1 over the
    whole text; the reason is the reference's."""
    mime = block.get("mimeType")
    if not (isinstance(mime, str) and mime and ob["text"].startswith("[image ")):
        return None
    reason = ob["text"].rsplit(" omitted: ", 1)[-1]
    text = "[image %s omitted: %s" % (faithful_mime(mime), reason)
    return ref("neutralize_text", {"text": text})["text"]


def _faithful_lone_content(inp):
    """A lone text block where the `content` array belongs, read as a malformed content and
    rendered whole as its JSON (C6), payloads omitted and every line terminator escaped."""
    block = inp.get("content")
    if not (isinstance(block, dict) and block.get("type") == "text"
            and isinstance(block.get("text"), str) and block["text"].strip()):
        return None
    rendered = dict(json.loads(render_unknown(block)), text=block["text"])
    text = json.dumps(rendered, separators=(",", ":"))
    if len(text) > 8192:
        return None
    return {"content": [text_block(text)], "isError": inp.get("isError") is True}


def _faithful_block(block, ob):
    # A JPEG or PNG declared with a type providers refuse (image/jpg, a mismatch) is kept with
    # the type its bytes are, when the reference takes it under that type (F1 allows it).
    if block.get("type") == "image" and ob.get("type") == "text":
        raw = canonical_b64(block.get("data"))
        actual = sniff(raw) if raw else None
        if actual and actual != block.get("mimeType"):
            corrected = dict(block, mimeType=actual)
            kept = ref("coerce_tool_result", {"content": [corrected]})
            if kept and kept["content"] and kept["content"][0].get("type") == "image":
                return [image_block(block["data"], actual)]
        if ob.get("type") == "text":
            placeholder = _faithful_image_placeholder(block, ob)
            return None if placeholder is None else [text_block(placeholder)]
        return None
    placeholder = _faithful_placeholder(block) if ob.get("type") == "text" else None
    if placeholder is not None:
        return [text_block(placeholder)]
    # Otherwise only blocks that carry the tool's own text: other placeholders and the bounded
    # JSON of C6 stay as the reference wrote them.
    if source_text(block) is None or ob.get("type") != "text":
        return None
    new = faithful_text(ob["text"])
    return None if new == ob["text"] else [text_block(new)]


faithful_coerce = block_hook(_faithful_block)


def faithful(c):
    out, inp = c.output, c.inp
    if out is None or inp is UNPARSED:
        return None
    if c.op == "neutralize_text":
        new = faithful_text(out["text"])
        return None if new == out["text"] else {"text": new}
    if c.op == "coerce_tool_result":
        lone = _faithful_lone_content(inp) if isinstance(inp, dict) else None
        return lone if lone is not None else faithful_coerce(c)
    if c.op == "check_media_url":
        reason = out["allowed"] and faithful_refuses(inp["url"])
        return {"allowed": False, "reason": reason} if reason else None
    if c.op == "parse_reply":
        media = [u for u in out["mediaUrls"] if not (looks_remote(u) and faithful_refuses(u))]
        text = faithful_text(out["text"])
        if media == out["mediaUrls"] and text == out["text"]:
            return None
        return dict(out, text=text, mediaUrls=media,
                    rejectedMedia=out["rejectedMedia"] + len(out["mediaUrls"]) - len(media))
    if c.op == "normalize_stream":
        # The streamed text delivered in whole lines, where the reference starts a delivery
        # mid-line at a safe start; the final reply's delivery stricter. Both depend on the
        # joined text alone, whatever the chunking, so B3 holds.
        deliveries = out["deliveries"]
        n_final = final_delivery_count(inp)
        streamed, finals = deliveries[:len(deliveries) - n_final], deliveries[len(deliveries) - n_final:]
        if n_final > 1 or any(d["mediaUrls"] for d in streamed):
            return None
        if finals:
            d = finals[0]
            media = [u for u in d["mediaUrls"] if not (looks_remote(u) and faithful_refuses(u))]
            text = faithful_text(d["text"])
            finals = [{"text": text, "mediaUrls": media}] if text or media else []
        new = {"deliveries": whole_lines("".join(d["text"] for d in streamed)) + finals}
        return None if new == out else new
    return None


def whole_lines(text):
    """Deliveries of `text` that each start at a line start and end after a line end, but the
    last, which keeps what follows the last line end (a `\r\n` stays in one delivery)."""
    pieces = []
    parts = split_lines(text)
    for k in range(0, len(parts), 2):
        piece = parts[k] + (parts[k + 1] if k + 1 < len(parts) else "")
        if pieces and (not parts[k] or k + 1 == len(parts)):
            pieces[-1] += piece
        elif piece:
            pieces.append(piece)
    return [{"text": p, "mediaUrls": []} for p in pieces]


# ---- S1: directives the buggy neutralizer does not see ---------------------------------------

def leading(src, pos):
    return src[line_start(src, pos):pos]


s1_ascii_blank_only = text_variant(leak_transform(
    lambda s, p, k: any(ch not in " \t\n\r\x0b\x0c" for ch in leading(s, p))))

s1_case_sensitive = text_variant(leak_transform(
    lambda s, p, k: any(ch.islower() for ch in directive_word(s, p)[0])))


def _lf_only_leak(s, p, k):
    return not all(is_blank(ch) for ch in s[s.rfind("\n", 0, p) + 1:p])


s1_lf_only_lines = text_variant(leak_transform(_lf_only_leak))


def _nfkc_leak(s, p, k):
    word, colon = directive_word(s, p)
    return colon != ":" or any(ord(ch) > 127 and not is_ignorable(ch) for ch in word)


s1_no_nfkc = text_variant(leak_transform(_nfkc_leak))

s1_zero_width_in_word = text_variant(leak_transform(
    lambda s, p, k: any(is_ignorable(ch) for ch in directive_word(s, p)[0])))

s1_controls_not_blank = text_variant(leak_transform(
    lambda s, p, k: any(unicodedata.category(ch) == "Cc" and ch not in JS_SPACE
                        for ch in leading(s, p))))

s1_regex_no_multiline = text_variant(leak_transform(
    lambda s, p, k: not all(is_blank(ch) for ch in s[:p])))

s1_replace_first_only = text_variant(leak_transform(lambda s, p, k: k > 0))


def s1_resource_text_raw(c):
    def pick(block, ob):
        res = block.get("resource")
        if (block.get("type") == "resource" and isinstance(res, dict)
                and isinstance(res.get("text"), str) and res["text"]
                and ob.get("type") == "text" and ob["text"] != res["text"]
                and marker_positions(res["text"], ob["text"])):
            return [text_block(res["text"])]
        return None
    return block_hook(pick)(c)


def s1_stream_chunks_alone(c):
    inp = c.inp
    if c.op != "normalize_stream" or not isinstance(inp, dict) or c.output is None:
        return None
    chunks = inp.get("chunks")
    if not (isinstance(chunks, list) and len(chunks) > 1 and all(isinstance(x, str) for x in chunks)):
        return None
    if not any(ch in x for x in chunks for ch in COLON_LIKE):
        return None
    alone = [ref("neutralize_text", {"text": x})["text"] for x in chunks if x]
    deliveries = c.output["deliveries"]
    finals = final_delivery_count(inp)
    streamed = deliveries[:len(deliveries) - finals]
    if "".join(alone) == "".join(d["text"] for d in streamed):
        return None
    return {"deliveries": [{"text": t, "mediaUrls": []} for t in alone]
            + deliveries[len(deliveries) - finals:]}


# ---- S2: image blocks the buggy validator lets through ----------------------------------------

def image_variant(accept):
    """`accept(data, mimeType, reference output block)` returns the image block the buggy
    validator emits for an input image block, or None."""
    def pick(block, ob):
        if block.get("type") != "image":
            return None
        new = accept(block.get("data"), block.get("mimeType"), ob)
        return None if new is None or new == ob else [new]
    return block_hook(pick, from_input=True)


def _gif(data, mime, ob):
    raw = canonical_b64(data)
    return image_block(data, mime) if mime == "image/gif" and raw and sniff(raw) == mime else None


def _trust_mime(data, mime, ob):
    raw = canonical_b64(data)
    if mime in ALLOWED_IMAGE_TYPES and raw is not None and sniff(raw) != mime:
        return image_block(data, mime)
    return None


def _lenient_b64(data, mime, ob):
    if not isinstance(data, str) or canonical_b64(data) is not None or mime not in ALLOWED_IMAGE_TYPES:
        return None
    squeezed = re.sub(r"\s", "", data)
    squeezed += "=" * (-len(squeezed) % 4)
    return image_block(data, mime) if valid_image_of(squeezed, mime) else None


def _data_uri(data, mime, ob):
    if not isinstance(data, str) or not data.startswith("data:") or ";base64," not in data:
        return None
    return image_block(data, mime) if valid_image_of(data.split(";base64,", 1)[1], mime) else None


def _no_size_limit(data, mime, ob):
    if isinstance(data, str) and len(data) > MAX_B64_LEN and mime in ALLOWED_IMAGE_TYPES:
        return image_block(data, mime) if valid_image_of(data, mime) else None
    return None


def _no_dimension_limit(data, mime, ob):
    if ob.get("type") == "text" and "dimension" in ob["text"] and mime in ALLOWED_IMAGE_TYPES:
        return image_block(data, mime) if valid_image_of(data, mime) else None
    return None


def _empty_data(data, mime, ob):
    if data is None or data == "":
        return image_block("", mime if isinstance(mime, str) else "image/png")
    return None


def _mime_case(data, mime, ob):
    if isinstance(mime, str) and mime != mime.lower() and mime.lower() in ALLOWED_IMAGE_TYPES:
        return image_block(data, mime) if valid_image_of(data, mime.lower()) else None
    return None


s2_accepts_gif = image_variant(_gif)
s2_trusts_mimetype = image_variant(_trust_mime)
s2_lenient_base64 = image_variant(_lenient_b64)
s2_data_uri_prefix = image_variant(_data_uri)
s2_no_size_limit = image_variant(_no_size_limit)
s2_no_dimension_limit = image_variant(_no_dimension_limit)
s2_empty_data_passthrough = image_variant(_empty_data)
s2_mime_case_insensitive = image_variant(_mime_case)


# ---- S3 / U: URLs and paths the buggy policy accepts ------------------------------------------

def _http(url, verdict):
    if verdict.get("reason") != "scheme" or not url.lower().startswith("http://"):
        return False
    https = ref("check_media_url", {"url": "https://" + url[7:]})
    return bool(https and https["allowed"])


def _userinfo(url, verdict):
    if verdict.get("reason") != "userinfo" or "://" not in url:
        return False
    scheme, rest = url.split("://", 1)
    authority, sep, tail = re.match(r"([^/?#]*)([/?#]?)(.*)", rest, re.S).groups()
    cleaned = ref("check_media_url", {"url": scheme + "://" + authority.rsplit("@", 1)[-1] + sep + tail})
    return bool(cleaned and cleaned["allowed"])


def _raw_host_ip(url, verdict):
    host = host_of(url)
    return (verdict.get("reason") == "ip-not-global" and host is not None and "." in host.strip(".")
            and not re.fullmatch(r"(\d{1,3}\.){3}\d{1,3}\.?", host) and whatwg_ipv4(host) is not None)


CGNAT_AND_BENCHMARK = [ipaddress.IPv4Network("100.64.0.0/10"), ipaddress.IPv4Network("198.18.0.0/15")]


def _cgnat(url, verdict):
    ip = whatwg_ipv4(host_of(url)) if verdict.get("reason") == "ip-not-global" else None
    return ip is not None and any(ip in net for net in CGNAT_AND_BENCHMARK)


EMBEDDING_V6 = [ipaddress.IPv6Network(n) for n in ("64:ff9b::/96", "2002::/16", "2001::/32", "::/96")]


def _embedded_v4(url, verdict):
    ip = ipv6_host(url) if verdict.get("reason") == "ip-not-global" else None
    return (ip is not None and int(ip) > 1 and any(ip in net for net in EMBEDDING_V6))


def _internal_suffix(url, verdict):
    host = (host_of(url) or "").rstrip(".")
    return (verdict.get("reason") == "special-name" and "." in host and host != "localhost"
            and not host.endswith((".localhost", ".local")))


def _single_label(url, verdict):
    host = (host_of(url) or "").rstrip(".")
    return verdict.get("reason") == "special-name" and host and "." not in host and host != "localhost"


def _wildcard_dns(url, verdict):
    host = host_of(url)
    return (verdict.get("reason") == "ip-not-global" and host is not None
            and not host.startswith("[") and ":" not in host
            and re.search(r"[a-z]", host) is not None and whatwg_ipv4(host) is None)


u1_raw_host_ip_check = url_variant(_raw_host_ip)
u2_allows_http = url_variant(_http)
u3_allows_userinfo = url_variant(_userinfo)
u4_misses_cgnat = url_variant(_cgnat)
u5_misses_embedded_ipv4 = url_variant(_embedded_v4)
u6_misses_internal_suffixes = url_variant(_internal_suffix)
u6_allows_single_label = url_variant(_single_label)
u7_misses_wildcard_dns = url_variant(_wildcard_dns)

REASON_CODES = {"ok": 0, "parse": 1, "raw-syntax": 2, "scheme": 3, "userinfo": 4,
                "ip-not-global": 5, "special-name": 6}


def u8_reason_not_string(c):
    if c.op != "check_media_url" or c.output is None:
        return None
    return dict(c.output, reason=REASON_CODES.get(c.output.get("reason"), 99))


def _dotdot_escape(target, roots):
    if looks_remote(target) or not roots or not isinstance(roots[0], str):
        return None
    if ".." not in target.replace("\\", "/").split("/"):
        return None
    path = target if target.startswith("/") else roots[0].rstrip("/") + "/" + target
    return path if any(isinstance(r, str) and path.startswith(r) for r in roots) else None


def _any_absolute(target, roots):
    return target if target.startswith("/") and not looks_remote(target) else None


s3_path_dotdot_escape = reply_accepts(_dotdot_escape)
s3_any_absolute_path = reply_accepts(_any_absolute)


def s3_stream_blocks_trusted(c):
    inp = c.inp
    if c.op != "normalize_stream" or not isinstance(inp, dict) or c.output is None:
        return None
    chunks, roots = inp.get("chunks"), inp.get("roots") or []
    if not (isinstance(chunks, list) and all(isinstance(x, str) for x in chunks)):
        return None
    if not any("MEDIA" in x.upper() for x in chunks):
        return None
    parsed = [ref("parse_reply", {"text": x, "roots": roots}) for x in chunks if x]
    if not any(p and p["mediaUrls"] for p in parsed):
        return None
    deliveries = c.output["deliveries"]
    finals = deliveries[len(deliveries) - final_delivery_count(inp):]
    return {"deliveries": [{"text": p["text"], "mediaUrls": p["mediaUrls"]}
                           for p in parsed if p and (p["text"] or p["mediaUrls"])] + finals}


# ---- S4 / R: fallback retries -----------------------------------------------------------------

s4_never_strips = retry_variant(lambda a, f, p, cand: True)
r1_strips_first_attempt = retry_variant(
    lambda a, f, p, cand: bool(p) and p.lower() == cand.lower() and f != "format")
r2_keeps_after_format = retry_variant(
    lambda a, f, p, cand: (a == 0 and f is None) or (bool(p) and p.lower() == cand.lower()))
r3_keeps_cross_provider = retry_variant(
    lambda a, f, p, cand: (a == 0 and f is None) or (f != "format" and bool(p)))
r4_unknown_primary_keeps = retry_variant(
    lambda a, f, p, cand: (a == 0 and f is None)
    or (f != "format" and (not p or p.lower() == cand.lower())))
r5_case_sensitive_ids = retry_variant(
    lambda a, f, p, cand: (a == 0 and f is None) or (f != "format" and bool(p) and p == cand))

_last_images = []


def r6_invents_images(c):
    """A module-level "last user images" cache fills an attempt that has none."""
    global _last_images
    if c.op != "resolve_retry_images":
        return None
    req = retry_request(c.inp)
    if req is None or c.output is None:
        return None
    a, f, p, cand, imgs = req
    if imgs:
        _last_images = imgs
        return None
    if _last_images and reference_keeps(a, f, p, cand):
        return {"images": _last_images}
    return None


# ---- P2: tool names ---------------------------------------------------------------------------

p2_no_cap = names_variant(cap=None)
p2_no_truncate = names_variant(length=None)
p2_keeps_spaces = names_variant(keep=r"A-Za-z0-9_\- ")


# ---- F: fidelity of coerce_tool_result --------------------------------------------------------

def _drop_large(block, ob):
    if ob.get("type") == "image" and len(ob["data"]) > 1_000_000:
        return []
    return None


def _trim(block, ob):
    if block.get("type") == "text" and ob.get("type") == "text" and ob["text"] != ob["text"].strip():
        return [text_block(ob["text"].strip())]
    return None


f1_drop_large_images = block_hook(_drop_large)
f2_trim_text = block_hook(_trim)


def f3_images_first(c):
    out = c.output
    if c.op != "coerce_tool_result" or not isinstance(out, dict) or "content" not in out:
        return None
    content = sorted(out["content"], key=lambda b: b["type"] != "image")
    return None if content == out["content"] else dict(out, content=content)


def f3_iserror_truthy(c):
    out = c.output
    if c.op != "coerce_tool_result" or not isinstance(c.inp, dict) or out is None:
        return None
    flag = c.inp.get("isError")
    if isinstance(flag, bool) or not flag:
        return None
    return dict(out, isError=True)


def f3_merge_text_blocks(c):
    out = c.output
    if c.op != "coerce_tool_result" or not isinstance(out, dict) or "content" not in out:
        return None
    merged = []
    for b in out["content"]:
        if b["type"] == "text" and merged and merged[-1]["type"] == "text":
            merged[-1] = text_block(merged[-1]["text"] + "\n" + b["text"])
        else:
            merged.append(b)
    return None if len(merged) == len(out["content"]) else dict(out, content=merged)


def _blob_text(block, ob):
    res = block.get("resource")
    if (block.get("type") == "resource" and isinstance(res, dict) and isinstance(res.get("blob"), str)
            and res["blob"] and not (isinstance(res.get("text"), str) and res["text"])):
        return [text_block(res["blob"])]
    return None


def _link_label_only(block, ob):
    if block.get("type") != "resource_link" or ob.get("type") != "text":
        return None
    label = next((x for x in (block.get("title"), block.get("name")) if isinstance(x, str) and x), None)
    if label is None or not ob["text"].startswith("[" + label + "] "):
        return None
    return [text_block("[" + label + "]")]


TRUNCATED = "…[truncated]"
BASE64ISH = re.compile(r"[A-Za-z0-9+/=_\-\s]*")


def render_unknown(block):
    """Compact JSON of a block with base64 payloads replaced as C6 asks, without any bound."""
    def scrub(v, key=None):
        if isinstance(v, str):
            if (key in ("data", "blob") and v) or (len(v) >= 256 and BASE64ISH.fullmatch(v)):
                return "[%d base64 characters omitted]" % len(v)
            return v
        if isinstance(v, dict):
            return {k: scrub(x, k) for k, x in v.items()}
        if isinstance(v, list):
            return [scrub(x) for x in v]
        return v
    return json.dumps(scrub(block), ensure_ascii=False, separators=(",", ":"))


def _unbounded(block, ob):
    if ob.get("type") != "text" or not ob["text"].endswith(TRUNCATED):
        return None
    full = ref("neutralize_text", {"text": render_unknown(block)})["text"]
    return [text_block(full)] if full.startswith(ob["text"][:-len(TRUNCATED)]) else None


def _blob_text_dropped(block, ob):
    res = block.get("resource")
    if not (block.get("type") == "resource" and isinstance(res, dict)
            and isinstance(res.get("blob"), str) and ob.get("type") == "text"):
        return None
    # The placeholder the reference writes for the same resource without bytes to decode.
    bare = ref("coerce_tool_result", {"content": [dict(block, resource=dict(res, blob=""))]})
    text = bare["content"][0].get("text") if bare and bare["content"] else None
    return [text_block(text)] if isinstance(text, str) and text != ob["text"] else None


# Built from the input's blob: as the second of a pair it leaves a block the first changed.
c5_blob_text_dropped = block_hook(_blob_text_dropped, from_input=True)
f4_blob_in_text = block_hook(_blob_text, from_input=True)
f4_drop_link_uri = block_hook(_link_label_only)
f4_unbounded_unknown = block_hook(_unbounded)


def f5_malformed_drops_all(c):
    inp, out = c.inp, c.output
    if c.op != "coerce_tool_result" or not isinstance(inp, dict) or out is None:
        return None
    content = inp.get("content")
    if not isinstance(content, list):
        return None
    bad = next((i for i, b in enumerate(content)
                if not isinstance(b, dict) or not isinstance(b.get("type"), str)), None)
    if bad is None:
        return None
    return {"content": [text_block("[tool result could not be read: content[%d] is malformed]" % bad)],
            "isError": out["isError"]}


# ---- C: coercion rules ------------------------------------------------------------------------

def _stringify(block, ob):
    if block.get("type") == "text" and "text" in block and not isinstance(block["text"], str):
        return [text_block(str(block["text"]))]
    return None


def _drop_invalid_image(block, ob):
    if block.get("type") == "image" and ob.get("type") == "text" and ob["text"].startswith("[image "):
        return []
    return None


def _drop_audio(block, ob):
    return [] if block.get("type") == "audio" else None


def _name_first(block, ob):
    name, title, uri = block.get("name"), block.get("title"), block.get("uri")
    if (block.get("type") == "resource_link" and all(isinstance(x, str) and x for x in (name, title, uri))
            and name != title and ob.get("type") == "text" and ob["text"].startswith("[" + title + "]")):
        return [text_block("[%s] %s" % (name, uri))]
    return None


def _ignore_resource_text(block, ob):
    res = block.get("resource")
    if (block.get("type") == "resource" and isinstance(res, dict) and isinstance(res.get("text"), str)
            and res["text"] and isinstance(res.get("uri"), str)):
        mime = res.get("mimeType") if isinstance(res.get("mimeType"), str) and res.get("mimeType") else "unknown"
        return [text_block("[resource %s] %s" % (mime, res["uri"]))]
    return None


def _drop_unknown(block, ob):
    t = block.get("type")
    return [] if isinstance(t, str) and t not in KNOWN_BLOCK_TYPES else None


c1_stringify_text = block_hook(_stringify, from_input=True)
c2_drop_invalid_image = block_hook(_drop_invalid_image)
c3_drop_audio = block_hook(_drop_audio, from_input=True)
c4_name_over_title = block_hook(_name_first)
c5_resource_text_ignored = block_hook(_ignore_resource_text, from_input=True)
c6_drop_unknown = block_hook(_drop_unknown, from_input=True)


def c7_ignore_structured(c):
    inp = c.inp
    if c.op != "coerce_tool_result" or not isinstance(inp, dict):
        return None
    if not isinstance(inp.get("structuredContent"), dict) or inp.get("content") not in (None, []):
        return None
    rest = {k: v for k, v in inp.items() if k != "structuredContent"}
    out = ref("coerce_tool_result", rest)
    return None if out is None or out == c.output else out


def c8_error_non_object(c):
    if c.op == "coerce_tool_result" and c.inp is not UNPARSED and not isinstance(c.inp, dict):
        return Err("tool result must be a JSON object")
    return None


# ---- D: directives ----------------------------------------------------------------------------

def _delete_lines(src, out):
    positions = marker_positions(src, out)
    if not positions:
        return None
    parts, offset, kept, hit = split_lines(src), 0, [], set()
    for p in positions:
        hit.add(line_start(src, p))
    for k in range(0, len(parts), 2):
        line, term = parts[k], parts[k + 1] if k + 1 < len(parts) else ""
        if offset not in hit:
            kept += [line, term]
        offset += len(line) + len(term)
    return "".join(kept)


INLINE_MEDIA = re.compile(r"(?<!\[neutralized\] )(MEDIA:)", re.I)


def _inline(src, out):
    new = INLINE_MEDIA.sub(MARKER + r"\1", out) if isinstance(out, str) else out
    return None if new == out else new


d1_delete_directive_lines = text_variant(_delete_lines)
d1_neutralize_inline = text_variant(_inline)

VOICE = "[[audio_as_voice]]"
HOLE = "\ue000"


def d2_voice_tag_left(c):
    inp = c.inp
    if c.op != "parse_reply" or not isinstance(inp, dict) or not isinstance(inp.get("text"), str):
        return None
    if VOICE not in inp["text"] or HOLE in inp["text"]:
        return None
    out = ref("parse_reply", dict(inp, text=inp["text"].replace(VOICE, HOLE)))
    if out is None or HOLE not in out["text"]:
        return None
    return dict(out, text=out["text"].replace(HOLE, VOICE), audioAsVoice=True)


EMBED_URL_RE = re.compile(r'\[embed url="([^"\[\]]*)" /\]')


def s3_embed_url_unchecked(c):
    inp = c.inp
    if c.op != "parse_reply" or not isinstance(inp, dict) or not isinstance(inp.get("text"), str):
        return None
    urls = EMBED_URL_RE.findall(inp["text"])
    if not urls:
        return None
    holes = {"/\ue002%d" % i: url for i, url in enumerate(urls)}
    it = iter(holes)
    out = ref("parse_reply", dict(inp, text=EMBED_URL_RE.sub(lambda m: '[embed url="%s" /]' % next(it), inp["text"])))
    if out is None:
        return None
    for embed in out["embeds"]:
        preview = embed.get("preview", {})
        if preview.get("url") in holes:
            preview["url"] = holes[preview["url"]]
    return out


def d2_rejected_line_kept(c):
    inp = c.inp
    if c.op != "parse_reply" or not isinstance(inp, dict) or not isinstance(inp.get("text"), str):
        return None
    roots = inp.get("roots") if isinstance(inp.get("roots"), list) else []
    lines, kept = inp["text"].split("\n"), {}
    for i, line in enumerate(lines):
        if DIRECTIVE_RE.match(line) and ref_rejects_target(DIRECTIVE_RE.match(line).group(2), roots):
            kept["\ue001%d\ue001" % i] = line
            lines[i] = "\ue001%d\ue001" % i
    if not kept:
        return None
    out = ref("parse_reply", dict(inp, text="\n".join(lines)))
    if out is None:
        return None
    text = out["text"]
    for hole, line in kept.items():
        text = text.replace(hole, line)
    return dict(out, text=text, rejectedMedia=out["rejectedMedia"] + len(kept))


def _dedupe_by_spelling(text, roots, media):
    """`media` with each URL repeated once per distinct raw spelling that produced it."""
    spellings = {}
    for line in text.split("\n"):
        m = DIRECTIVE_RE.match(line)
        if m:
            got = ref("parse_reply", {"text": line, "roots": roots})
            if got and got["mediaUrls"]:
                spellings.setdefault(got["mediaUrls"][0], set()).add(m.group(2))
    new = []
    for u in media:
        new += [u] * max(1, len(spellings.get(u, ())))
    return new


def d3_dedupe_raw_string(c):
    inp, out = c.inp, c.output
    if c.op not in ("parse_reply", "normalize_stream") or not isinstance(inp, dict) or out is None:
        return None
    roots = inp.get("roots") if isinstance(inp.get("roots"), list) else []
    if c.op == "parse_reply":
        if len(out["mediaUrls"]) == 0:
            return None
        media = _dedupe_by_spelling(inp["text"], roots, out["mediaUrls"])
        return None if media == out["mediaUrls"] else dict(out, mediaUrls=media)
    final = inp.get("final")
    if not isinstance(final, str) or not out["deliveries"] or not out["deliveries"][-1]["mediaUrls"]:
        return None
    last = out["deliveries"][-1]
    media = _dedupe_by_spelling(final, roots, last["mediaUrls"])
    if media == last["mediaUrls"]:
        return None
    return {"deliveries": out["deliveries"][:-1] + [dict(last, mediaUrls=media)]}


# ---- B: robustness ----------------------------------------------------------------------------

def _depth(v):
    if isinstance(v, dict):
        return 1 + max(map(_depth, v.values()), default=0)
    if isinstance(v, list):
        return 1 + max(map(_depth, v), default=0)
    return 0


def b1_crash_deep_nesting(c):
    """Validates the input with a recursive walk and no guard: RecursionError ends the process."""
    if c.parse_error is not None:
        raise c.parse_error
    _depth(c.inp)
    return None


REDOS = re.compile(r"(?:\s+)+MEDIA:", re.I)


def b1_redos_hang(c):
    """A pre-check regex with nested quantifiers: exponential on a long blank run (>= ~26)."""
    if c.op == "neutralize_text" and isinstance(c.inp, dict) and isinstance(c.inp.get("text"), str):
        for line in c.inp["text"].split("\n"):
            REDOS.match(line)
    return None


DOUBLE = re.compile(r"^(\s*)((?:\[neutralized\] )+)(MEDIA:)", re.I)


def _double_prefix(src, out):
    parts_in, parts_out = split_lines(src), split_lines(out)
    if len(parts_in) != len(parts_out):
        return None
    changed = False
    for k in range(0, len(parts_in), 2):
        if parts_in[k] == parts_out[k] and DOUBLE.match(parts_out[k]):
            parts_out[k] = DOUBLE.sub(lambda m: m.group(1) + MARKER + m.group(2) + m.group(3),
                                      parts_out[k])
            changed = True
    return "".join(parts_out) if changed else None


b2_double_prefix = text_variant(_double_prefix)


def b3_rstrip_blocks(c):
    inp, out = c.inp, c.output
    if c.op != "normalize_stream" or not isinstance(inp, dict) or out is None:
        return None
    deliveries = out["deliveries"]
    if not any(d["text"] != d["text"].rstrip() for d in deliveries):
        return None
    n = len(deliveries) - final_delivery_count(inp)
    streamed = [dict(d, text=d["text"].rstrip()) for d in deliveries[:n]]
    streamed = [d for d in streamed if d["text"] or d["mediaUrls"]]
    new = streamed + deliveries[n:]
    return None if new == deliveries else {"deliveries": new}


# =============================================================================================
# The table: name -> (rule it breaks, the bug in one line, the function, the ops it touches)
# =============================================================================================


class Variant(NamedTuple):
    rule: str
    description: str
    fn: Callable[[Call], object]
    ops: tuple
    # The ops on which `fn` builds its answer from the input alone (asking the reference about a
    # changed input, or answering an error) instead of editing the answer it is given: as the
    # second of a pair it would drop the first's bug, so there it skips an answer the first
    # variant changed.
    answers: tuple = ()


TEXT = ("neutralize_text", "coerce_tool_result")
COERCE = ("coerce_tool_result",)
URL = ("check_media_url", "parse_reply", "normalize_stream")
REPLY = ("parse_reply", "normalize_stream")
STREAM = ("normalize_stream",)
RETRY = ("resolve_retry_images",)
NAMES = ("sanitize_tool_names",)

VARIANTS = {
    "faithful": Variant("-", "the reference plus stricter choices the spec allows: also neutralizes lines that only look like directives (`MEDIA :`, `- MEDIA:`, `> MEDIA:`, `·MEDIA:`, `ⓂMEDIA:`), refuses URLs with a port other than 443 or a host over 100 characters; writes resource-link and audio placeholders as JSON with escaped fields (a label of blanks dropped, the media type cut at 64 characters), an invalid image's media type cut and neutralized on its own, a lone content object as its JSON, streamed text in whole lines, and keeps an image declared with a type its bytes are not (image/jpg) under the type they are", faithful, ("neutralize_text", "coerce_tool_result", "check_media_url", "parse_reply", "normalize_stream")),
    # S1
    "s1_ascii_blank_only": Variant("S1", "only ASCII whitespace counts as a leading blank (U+3000, U+00A0, U+FEFF... before MEDIA: leak)", s1_ascii_blank_only, TEXT),
    "s1_case_sensitive": Variant("S1", "the directive match is case-sensitive (`media:` / `Media:` leak)", s1_case_sensitive, TEXT),
    "s1_lf_only_lines": Variant("S1", "text is split on \\n only, so \\r, U+2028, U+2029, U+0085, VT, FF do not start a line", s1_lf_only_lines, TEXT),
    "s1_no_nfkc": Variant("S1", "no NFKC folding: fullwidth / mathematical letters or a fullwidth colon (ＭＥＤＩＡ：) leak", s1_no_nfkc, TEXT),
    "s1_zero_width_in_word": Variant("S1", "a zero-width or other hidden character inside the word (M\\u200bEDIA:) defeats the match", s1_zero_width_in_word, TEXT),
    "s1_controls_not_blank": Variant("S1", "leading blanks are ECMAScript \\s only: control characters (\\x1f, \\x01...) before MEDIA: leak", s1_controls_not_blank, TEXT),
    "s1_regex_no_multiline": Variant("S1", "the directive regex lacks the multiline flag: only a directive at the start of the text is caught", s1_regex_no_multiline, TEXT),
    "s1_replace_first_only": Variant("S1", "replace() without the global flag: only the first directive line is neutralized", s1_replace_first_only, TEXT),
    "s1_resource_text_raw": Variant("S1", "embedded resource text bypasses the neutralizer (only text blocks are neutralized)", s1_resource_text_raw, COERCE),
    "s1_stream_chunks_alone": Variant("S1", "each streamed chunk is neutralized on its own: a directive split across chunks is delivered live", s1_stream_chunks_alone, STREAM, answers=STREAM),
    # S2
    "s2_accepts_gif": Variant("S2", "image/gif is on the allowlist (Gemini refuses it)", s2_accepts_gif, COERCE),
    "s2_trusts_mimetype": Variant("S2", "mimeType is trusted without checking the magic bytes", s2_trusts_mimetype, COERCE),
    "s2_lenient_base64": Variant("S2", "base64 is decoded leniently (whitespace, missing padding) and forwarded as given", s2_lenient_base64, COERCE),
    "s2_data_uri_prefix": Variant("S2", "a `data:image/...;base64,` prefix is stripped for validation but forwarded", s2_data_uri_prefix, COERCE),
    "s2_no_size_limit": Variant("S2", "no 5,242,880-character base64 length limit", s2_no_size_limit, COERCE),
    "s2_no_dimension_limit": Variant("S2", "no 8000-pixel dimension limit", s2_no_dimension_limit, COERCE),
    "s2_empty_data_passthrough": Variant("S2", "an image block with missing or empty data is forwarded as an image with data \"\" (the seed 001 bug)", s2_empty_data_passthrough, COERCE),
    "s2_mime_case_insensitive": Variant("S2", "mimeType compared case-insensitively and forwarded as given (IMAGE/PNG)", s2_mime_case_insensitive, COERCE),
    # S3 / U
    "s3_path_dotdot_escape": Variant("S3", "local paths are checked with a string prefix before normalization: /root/../etc/passwd passes", s3_path_dotdot_escape, REPLY, answers=REPLY),
    "s3_any_absolute_path": Variant("S3", "any absolute local path is accepted, inside the roots or not", s3_any_absolute_path, REPLY, answers=REPLY),
    "s3_stream_blocks_trusted": Variant("S3", "streamed blocks go through the trusted final-reply parser: their MEDIA: lines deliver media", s3_stream_blocks_trusted, STREAM, answers=STREAM),
    "u1_raw_host_ip_check": Variant("U1", "private-IP check runs on the raw host string: only dotted-quad decimal is seen as an IP (127.1, 0x7f.1, %31%32%37.0.0.1 pass)", u1_raw_host_ip_check, URL, answers=REPLY),
    "u2_allows_http": Variant("U2", "scheme check accepts http: as well as https:", u2_allows_http, URL, answers=REPLY),
    "u3_allows_userinfo": Variant("U3", "userinfo (user:pass@) is ignored instead of rejected", u3_allows_userinfo, URL, answers=REPLY),
    "u4_misses_cgnat": Variant("U4", "the IPv4 blocklist lacks 100.64.0.0/10 (CGNAT) and 198.18.0.0/15 (benchmarking)", u4_misses_cgnat, URL, answers=REPLY),
    "u5_misses_embedded_ipv4": Variant("U5", "IPv6 is judged by the IPv6 registry alone: NAT64, 6to4, Teredo, IPv4-compatible forms of private IPv4 pass", u5_misses_embedded_ipv4, URL, answers=REPLY),
    "u6_misses_internal_suffixes": Variant("U6", "only localhost, *.localhost and .local are special: .internal, .home.arpa, .lan, .corp... pass", u6_misses_internal_suffixes, URL, answers=REPLY),
    "u6_allows_single_label": Variant("U6", "single-label host names (https://intranet/) are accepted", u6_allows_single_label, URL, answers=REPLY),
    "u7_misses_wildcard_dns": Variant("U7", "wildcard-DNS names (127.0.0.1.nip.io, 10-0-0-1.sslip.io) are judged as plain names", u7_misses_wildcard_dns, URL, answers=REPLY),
    "u8_reason_not_string": Variant("U8", "the reason is serialized as an integer enum instead of a string code", u8_reason_not_string, ("check_media_url",)),
    # S4 / R
    "s4_never_strips": Variant("S4", "the fallback path never calls the retry image policy: every retry keeps the images", s4_never_strips, RETRY),
    "r1_strips_first_attempt": Variant("R1", "the strip policy also runs on the first attempt", r1_strips_first_attempt, RETRY),
    "r2_keeps_after_format": Variant("R2", "a format failure on the same provider keeps the images", r2_keeps_after_format, RETRY),
    "r3_keeps_cross_provider": Variant("R3", "a retry on another provider keeps the images (only format errors strip)", r3_keeps_cross_provider, RETRY),
    "r4_unknown_primary_keeps": Variant("R4", "an unknown (null / empty) primary provider is treated as the same provider (fail open)", r4_unknown_primary_keeps, RETRY),
    "r5_case_sensitive_ids": Variant("R5", "provider ids compared case-sensitively: Anthropic vs anthropic strips on a same-provider retry", r5_case_sensitive_ids, RETRY),
    "r6_invents_images": Variant("R6", "a module-level cache of the last images fills a request that has none", r6_invents_images, RETRY),
    # P2
    "p2_no_cap": Variant("P2", "no 20-name cap", p2_no_cap, NAMES),
    "p2_no_truncate": Variant("P2", "names are not truncated to 100 characters", p2_no_truncate, NAMES),
    "p2_keeps_spaces": Variant("P2", "the allowed character class includes the space", p2_keeps_spaces, NAMES),
    # F
    "f1_drop_large_images": Variant("F1", "valid images over 1,000,000 base64 characters are dropped without a note", f1_drop_large_images, COERCE),
    "f2_trim_text": Variant("F2", "text blocks are trimmed", f2_trim_text, COERCE),
    "f3_images_first": Variant("F3", "image blocks are moved before the text blocks", f3_images_first, COERCE),
    "f3_iserror_truthy": Variant("F3", "isError is taken by truthiness (\"true\", \"false\", 1 become true)", f3_iserror_truthy, COERCE),
    "f3_merge_text_blocks": Variant("F3", "adjacent text blocks are joined into one block", f3_merge_text_blocks, COERCE),
    "f4_blob_in_text": Variant("F4", "a blob resource becomes text holding its base64 blob (resource.text ?? resource.blob)", f4_blob_in_text, COERCE),
    "f4_drop_link_uri": Variant("F4", "a resource_link keeps only its label, not its URI", f4_drop_link_uri, COERCE),
    "f4_unbounded_unknown": Variant("F4", "the JSON text of an unknown block is not cut to 8 KiB", f4_unbounded_unknown, COERCE),
    "f5_malformed_drops_all": Variant("F5", "one malformed block (not an object, no type) replaces the whole result with one error text", f5_malformed_drops_all, COERCE, answers=COERCE),
    # C
    "c1_stringify_text": Variant("C1", "a non-string `text` is stringified (str(5) -> \"5\") instead of treated as malformed", c1_stringify_text, COERCE),
    "c2_drop_invalid_image": Variant("C2", "an invalid image is dropped instead of becoming a placeholder text", c2_drop_invalid_image, COERCE),
    "c3_drop_audio": Variant("C3", "audio blocks are dropped", c3_drop_audio, COERCE),
    "c4_name_over_title": Variant("C4", "resource_link label prefers name over title", c4_name_over_title, COERCE),
    "c5_blob_text_dropped": Variant("C5", "a text file sent as a blob of a textual media type becomes `[resource <mime>] <uri>` alone, its decoded text is lost", c5_blob_text_dropped, COERCE),
    "c5_resource_text_ignored": Variant("C5", "an embedded text resource becomes `[resource <mime>] <uri>`, its text is lost", c5_resource_text_ignored, COERCE),
    "c6_drop_unknown": Variant("C6", "blocks of unknown type are dropped", c6_drop_unknown, COERCE),
    "c7_ignore_structured": Variant("C7", "structuredContent is ignored when content is missing or empty", c7_ignore_structured, COERCE, answers=COERCE),
    "c8_error_non_object": Variant("C8", "a result that is not an object is answered with an error", c8_error_non_object, COERCE, answers=COERCE),
    # D
    "d1_delete_directive_lines": Variant("D1", "directive lines are deleted instead of prefixed", d1_delete_directive_lines, TEXT),
    "d1_neutralize_inline": Variant("D1", "every MEDIA: is prefixed, also in the middle of a line (plain replace)", d1_neutralize_inline, TEXT),
    "d2_voice_tag_left": Variant("D2", "[[audio_as_voice]] sets the flag but stays in the text", d2_voice_tag_left, ("parse_reply",), answers=("parse_reply",)),
    "s3_embed_url_unchecked": Variant("S3", "a canvas embed's url= is stored without the URL policy: private and non-https URLs are rendered", s3_embed_url_unchecked, ("parse_reply",), answers=("parse_reply",)),
    "d2_rejected_line_kept": Variant("D2", "a MEDIA: line whose target is rejected is counted but left in the text", d2_rejected_line_kept, ("parse_reply",), answers=("parse_reply",)),
    "d3_dedupe_raw_string": Variant("D3", "media are deduplicated by their raw spelling, not after canonicalization", d3_dedupe_raw_string, REPLY),
    # B
    "b1_crash_deep_nesting": Variant("B1", "input is validated by an unguarded recursive walk: nesting near 1000 raises RecursionError and the process dies", b1_crash_deep_nesting, tuple(OPS)),
    "b1_redos_hang": Variant("B1", "a pre-check regex with nested quantifiers ((\\s+)+MEDIA:) backtracks exponentially on a long blank run", b1_redos_hang, ("neutralize_text",)),
    "b2_double_prefix": Variant("B2", "an already neutralized line is neutralized again ([neutralized] [neutralized] MEDIA:)", b2_double_prefix, TEXT),
    "b3_rstrip_blocks": Variant("B3", "each streamed block is right-trimmed before delivery, so the text depends on the chunking", b3_rstrip_blocks, STREAM),
}


# ---------------------------------------------------------------------------------------------
# The shim
# ---------------------------------------------------------------------------------------------

def encode_answer(c, result):
    if isinstance(result, Err):
        msg = {"id": c.id, "error": str(result)}
    else:
        msg = {"id": c.id, "output": result}
    return json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def apply(variants, c):
    """The answer `variants` give to `c` in order, each seeing the one before it (None: the
    reference's answer, unchanged)."""
    result = None
    for v in variants:
        if c.op not in v.ops or (result is not None and c.op in v.answers):
            continue
        new = v.fn(c if result is None else c.with_answer(result))
        if new is not None:
            result = new
    return result


def parse_names(value):
    """The variants `NORMFUZZ_MUTANT` names: one, or a pair `a+b` applied in that order."""
    names = value.split("+") if value else []
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise ValueError("unknown NORMFUZZ_MUTANT variant %s (see --list)"
                         % ", ".join(repr(n) for n in unknown))
    if len(names) > 2 or len(set(names)) != len(names):
        raise ValueError("NORMFUZZ_MUTANT %r: name one variant or a pair of two different "
                         "ones (a+b)" % value)
    return [VARIANTS[n] for n in names]


def serve(name, variants):
    child = Reference()
    out = sys.stdout.buffer
    out.write(json.dumps({"normfuzz": 1, "name": "mutant " + (name or "reference"), "ops": OPS}).encode() + b"\n")
    out.flush()
    queue = SimpleQueue()
    stats = {"variant": name or "reference", "requests": 0, "changed": 0, "changedByOp": {}}

    def answer_loop():
        try:
            while True:
                c = queue.get()
                if c is None:
                    return
                c.answer_raw = child.recv()
                result = apply(variants, c)
                stats["requests"] += 1
                if result is not None:
                    stats["changed"] += 1
                    stats["changedByOp"][c.op] = stats["changedByOp"].get(c.op, 0) + 1
                    answer = encode_answer(c, result)
                else:
                    answer = c.answer_raw
                    if isinstance(c.id, int) and not answer.startswith(b'{"id":%d,' % c.id):
                        # serve-reference answers `"id": null` to a request it cannot parse
                        # (nested deeper than serde_json's limit of 128): keep the request's id.
                        a = c.answer
                        answer = encode_answer(c, a["output"] if "output" in a else Err(a.get("error", "")))
                out.write(answer)
                out.flush()
        except BaseException:
            # An exception in the normalizer is a crash of the SUT, as in a real runtime.
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(70)

    writer = threading.Thread(target=answer_loop, daemon=True)
    writer.start()
    for raw in sys.stdin.buffer:
        if not raw.strip():
            continue
        c = Call(raw)
        child.send(raw)
        queue.put(c)
    queue.put(None)
    writer.join()
    child.close()
    if _helper is not None:
        _helper.close()
    if os.environ.get("NORMFUZZ_MUTANT_STATS"):
        # How often the bug fired: one JSON line per session, for checking that a variant that
        # survives a campaign was exercised at all.
        with open(os.environ["NORMFUZZ_MUTANT_STATS"], "a") as f:
            f.write(json.dumps(stats) + "\n")


def main():
    if sys.argv[1:] == ["--list"]:
        for name, v in VARIANTS.items():
            print(json.dumps({"name": name, "rule": v.rule, "description": v.description,
                              "answers": list(v.answers)}, ensure_ascii=False))
        return 0
    if len(sys.argv) > 1:
        print("usage: mutant.py [--list]   (variant from NORMFUZZ_MUTANT: a, or a pair a+b)", file=sys.stderr)
        return 2
    name = os.environ.get("NORMFUZZ_MUTANT", "")
    try:
        variants = parse_names(name)
    except ValueError as e:
        print("mutant.py: %s" % e, file=sys.stderr)
        return 2
    serve(name, variants)
    return 0


if __name__ == "__main__":
    sys.exit(main())

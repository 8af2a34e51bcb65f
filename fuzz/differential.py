"""Differential test of the module's JSON-RPC parser against Python's json.

A gateway decides from what the module reads and forwards the bytes to a
server with another parser.  This script makes bodies meant to split
parsers (duplicate and escaped names, surrogates, NUL, control bytes,
BOMs, odd numbers, odd white space, broken UTF-8, random byte edits of
valid messages), feeds them in bulk to build/fuzz/diff_jsonrpc (which
prints how the module read each one), reads the same bytes with Python's
json, and reports a finding whenever the module accepted a body that
Python refuses or reads as a different method, id, tool name or
arguments.  A body the module refuses is never a finding.

    python3 fuzz/differential.py DRIVER SECONDS [SEED]

Exits 1 on a finding (the body is printed, escaped), 0 otherwise.
"""

import json
import math
import random
import struct
import subprocess
import sys
import time

DRIVER, SECONDS = sys.argv[1], float(sys.argv[2])
SEED = int(sys.argv[3]) if len(sys.argv) > 3 else int(time.time())
rng = random.Random(SEED)

SEEDS = [
    {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
     "params": {"name": "harmless", "arguments": {"a": 1, "b": "x"}}},
    {"jsonrpc": "2.0", "id": "abc", "method": "tools/list", "params": {}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 7, "result": {"content": []}},
    {"jsonrpc": "2.0", "id": 9, "method": "initialize",
     "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"}}},
    {"jsonrpc": "2.0", "id": 12345678901234567890, "method": "ping"},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
     "params": {"name": "deep", "arguments": {"l": [1, [2, {"k": [3.5]}]],
                                               "e": "\u00e9\U0001f600"}}},
]

SPECIAL_NUMBERS = ["1e400", "-1e400", "-0", "0", "1.0", "1E+2", "1e-400",
                   "00", "01", ".5", "5.", "NaN", "Infinity", "-Infinity",
                   "1" + "0" * 400, "12345678901234567890", "9007199254740993",
                   "1.7976931348623157e308", "1.7976931348623159e308",
                   "179.77e306", "0e999999", "-", "+1", "0x10", "1_000"]

ODD_STRINGS = ["\\u0000", "\\ud800", "\\udc00", "\\ud83d\\ude00", "\\ud83d",
               "\\ud83dx", "\\u00e9", "\u00e9", "\\x41", "\\'", "\\U0041",
               "\x01", "\x1f", "\x7f", "\\/", "\\u004", "\\uD800\\uDC00",
               "\u2028", "\ufeff"]

ODD_BYTES = [b"\xef\xbb\xbf", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80",
             b"\xff", b"\xc3", b"\xe2\x82", b"\x00", b"\x0c", b"\x0b", b"\xc2\xa0",
             b"\t", b"\r\n", b" "]


def escape_key(k):
    """The same name written with some characters as \\u escapes."""
    out = []
    for ch in k:
        if rng.random() < 0.4 and ord(ch) < 0x10000:
            h = "%04x" % ord(ch)
            out.append("\\u" + (h.upper() if rng.random() < 0.5 else h))
        else:
            out.append(json.dumps(ch)[1:-1])
    return "".join(out)


def dump(v, dup):
    """Serialise by hand so that names can repeat and be escaped."""
    if isinstance(v, dict):
        items = []
        for k, x in v.items():
            name = escape_key(k) if rng.random() < 0.2 else json.dumps(k)[1:-1]
            items.append('"%s":%s' % (name, dump(x, dup)))
            if rng.random() < dup:
                other = rng.choice([x, "other", 0, None, {"name": "evil"}])
                name2 = escape_key(k) if rng.random() < 0.5 else json.dumps(k)[1:-1]
                items.insert(rng.randrange(len(items) + 1),
                             '"%s":%s' % (name2, dump(other, 0)))
        return "{" + ",".join(items) + "}"
    if isinstance(v, list):
        return "[" + ",".join(dump(x, dup) for x in v) + "]"
    if isinstance(v, str):
        s = json.dumps(v)
        if rng.random() < 0.15:
            pos = rng.randrange(1, len(s))
            s = s[:pos] + rng.choice(ODD_STRINGS) + s[pos:]
        return s
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if rng.random() < 0.2:
        return rng.choice(SPECIAL_NUMBERS)
    return json.dumps(v)


def mutate_bytes(b):
    b = bytearray(b)
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        pos = rng.randrange(len(b) + 1)
        if op < 0.3 and b:
            del b[min(pos, len(b) - 1)]
        elif op < 0.6:
            b[pos:pos] = rng.choice(ODD_BYTES + [bytes([rng.randrange(256)])])
        elif op < 0.8 and b:
            b[min(pos, len(b) - 1)] = rng.choice(b'{}[]:,"\\u0123456789eE.-+ ')
        else:
            b[pos:pos] = rng.choice([b'"name":"x",', b'"method":"ping",',
                                     b'"id":2,', b',', b'"', b'\\'])
    return bytes(b)


def make():
    msgs = [rng.choice(SEEDS) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
    dup = rng.choice([0, 0.05, 0.2, 0.5])
    texts = [dump(m, dup) for m in msgs]
    body = texts[0] if len(texts) == 1 and rng.random() < 0.7 \
        else "[" + ",".join(texts) + "]"
    if rng.random() < 0.1:
        depth = rng.randint(100, 140)
        body = body.replace('"a":1', '"a":' + "[" * depth + "]" * depth, 1)
    data = body.encode("utf-8", "surrogatepass")
    if rng.random() < 0.3:
        data = mutate_bytes(data)
    return data


class Dup(Exception):
    pass


def pairs(items):
    seen = set()
    for k, _ in items:
        if k in seen:
            raise Dup(k)
        seen.add(k)
    return dict(items)


def no_constant(name):
    raise ValueError(name)


def python_reads(data):
    """(value, why) as Python's json reads the body."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8"
    try:
        return json.loads(text, object_pairs_hook=pairs,
                          parse_constant=no_constant), None
    except Dup as e:
        return None, "duplicate name %r" % e.args[0]
    except (ValueError, RecursionError) as e:
        return None, "refused: %s" % e


def same(a, b):
    """Module's value (from cJSON, through JSON) against Python's."""
    if isinstance(b, bool) or b is None or isinstance(b, str):
        if isinstance(b, str) and any(0xd800 <= ord(c) <= 0xdfff for c in b):
            return False
        return type(a) is type(b) and a == b
    if isinstance(b, (int, float)):
        if isinstance(a, bool) or not isinstance(a, (int, float)):
            return False
        try:
            fb = float(b)
        except OverflowError:
            return False
        return not math.isinf(fb) and float(a) == fb
    if isinstance(b, list):
        return isinstance(a, list) and len(a) == len(b) \
            and all(same(x, y) for x, y in zip(a, b))
    if isinstance(b, dict):
        return isinstance(a, dict) and a.keys() == b.keys() \
            and all(same(a[k], b[k]) for k in b)
    return False


def check(data, mine):
    """None, or why the module and Python disagree."""
    if not mine["ok"]:
        return None
    value, why = python_reads(data)
    if why:
        return "the module accepted a body Python reads as: " + why
    msgs = value if mine["batch"] else [value]
    if not isinstance(msgs, list) or len(msgs) != len(mine["msgs"]):
        return "message count"
    for m, p in zip(mine["msgs"], msgs):
        if m["type"] == 0 or not isinstance(p, dict):
            continue
        if "method" in m and m["method"] != p.get("method"):
            return "method %r, Python %r" % (m["method"], p.get("method"))
        if "id" in m:
            pid = p.get("id")
            if m.get("id_raw"):
                if isinstance(pid, bool) or not isinstance(pid, int) \
                   or str(pid) != m["id"]:
                    return "id %s, Python %r" % (m["id"], pid)
            elif not same(m["id"], pid):
                return "id %r, Python %r" % (m["id"], pid)
        params = p.get("params") if isinstance(p.get("params"), dict) else {}
        if "name" in m and m["name"] != params.get("name"):
            return "name %r, Python %r" % (m["name"], params.get("name"))
        if "arguments" in m and not same(m["arguments"], params.get("arguments")):
            return "arguments differ"
    return None


def main():
    driver = subprocess.Popen([DRIVER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    deadline = time.time() + SECONDS
    total = accepted = 0
    while time.time() < deadline:
        batch = [make() for _ in range(500)]
        for data in batch:
            driver.stdin.write(struct.pack("<I", len(data)) + data)
        driver.stdin.flush()
        for data in batch:
            line = driver.stdout.readline()
            if not line:
                print("differential: the driver died (exit %s) on %r"
                      % (driver.wait(), data))
                return 1
            mine = json.loads(line)
            total += 1
            accepted += mine["ok"]
            why = check(data, mine)
            if why:
                print("differential: FINDING (seed %d): %s\n  body: %r\n  module: %s"
                      % (SEED, why, data, line.decode().strip()))
                driver.kill()
                return 1
    driver.stdin.close()
    rc = driver.wait()
    print("differential: %d bodies in %.0f s (seed %d), %d accepted by the "
          "module, no finding" % (total, SECONDS, SEED, accepted))
    return 1 if rc else 0


sys.exit(main())

"""What each hostile input known costs a decoder: one line per case with the wire bytes, the
decode's wall time, its peak RSS growth in MiB (VmHWM after clear_refs, Linux) and the outcome
(or, for the key cases, the time as a ratio to a benign header of the same size and key
types). Each case runs in a fresh interpreter of PY, the python whose fastser is the build to
measure: run it with two builds to compare them.

    python benchmarks/hostile.py PY      (PYTHONPATH=DIR picks a build installed in DIR)
"""
import subprocess
import sys
PY = sys.argv[1]
CASES = {}
PRE = r'''
import time, struct, msgpack, fastser, zlib, math
def rss():
    return {k: int(v.split()[0]) for k, v in (l.split(":", 1) for l in open("/proc/self/status")) if k in ("VmRSS", "VmHWM")}
def run(fn):
    open("/proc/self/clear_refs", "w").write("5")
    base = rss()["VmRSS"]
    t = time.perf_counter()
    try:
        out = fn(); res = "ok"
    except fastser.DeserializationError as e:
        res = "refused: " + str(e)[:90]
    dt = time.perf_counter() - t
    return dt, (rss()["VmHWM"] - base) / 1024, res
'''
CASES["1 zstd msgpack bomb, defaults (682 B)"] = r'''
import zstandard
M = 2**25 - 5
payload = b"\xdd" + struct.pack(">I", M) + b"\x80" * M
comp = zstandard.ZstdCompressor(level=19).compress(payload)
hdr = b"\x01" + msgpack.packb([msgpack.ExtType(12, b""), {"serializer": "msgpack", "compression": ["zstd"]}, [comp]])
d = fastser.Decoder(deserializers=fastser.SAFE_DESERIALIZERS)
print(len(hdr), *run(lambda: d.loads([hdr])))
'''
CASES["1b zstd msgpack bomb, max_header_bytes=4096"] = r'''
import zstandard
M = 2**25 - 5
payload = b"\xdd" + struct.pack(">I", M) + b"\x80" * M
comp = zstandard.ZstdCompressor(level=19).compress(payload)
hdr = b"\x01" + msgpack.packb([msgpack.ExtType(12, b""), {"serializer": "msgpack", "compression": ["zstd"]}, [comp]])
d = fastser.Decoder(deserializers=fastser.SAFE_DESERIALIZERS, limits=fastser.Limits(max_header_bytes=4096, max_frame_bytes=2**25, max_message_bytes=2**25))
print(len(hdr), *run(lambda: d.loads([hdr])))
'''
KEYS = r'''
M61 = (1 << 61) - 1
n = {n}
hostile = {hostile}
benign = {benign}
d = fastser.Decoder({opts})
enc = (lambda m: [b"\x01" + msgpack.packb(m)]) if {raw} else fastser.dumps
fh, fb = enc(hostile), enc(benign)
tb = min(run(lambda: d.loads(fb))[0] for _ in range(3))
th, mh, res = run(lambda: d.loads(fh))
print(len(fh[0]), th, mh, res, "| benign %d B %.4fs ratio %.0fx" % (len(fb[0]), tb, th / tb))
'''
CASES["2a ext-1 int keys k*(2**61-1)"] = KEYS.format(n=60000, hostile="dict.fromkeys(k * M61 for k in range(9, 9 + n))", benign="dict.fromkeys(2**70 + k * 12345 for k in range(n))", opts="", raw=False)
FLOATS = r'''(lambda: [x for s in range(61) for h in [sum(1 << ((b + s) % 61) for b in (0, 9, 18, 27, 36, 45))] for b in range(61) for m0 in [((h >> b) | (h << (61 - b))) & M61] if m0 & 1 and m0 < 1 << 53 for e in range(-1074 + (b + 1074) % 61, 972, 61) for x in [math.ldexp(m0, e)] if x and not math.isinf(x) and hash(x) == h][:n])()'''
CASES["2b float keys (groups of ~200 of one hash)"] = KEYS.format(n=12000, hostile="dict.fromkeys(" + FLOATS + ")", benign="dict.fromkeys(k + 0.5 for k in range(n))", opts="", raw=False)
CASES["2c tuple keys of colliding floats"] = KEYS.format(n=12000, hostile="dict.fromkeys((x,) for x in " + FLOATS + ")", benign="dict.fromkeys((k + 0.5,) for k in range(n))", opts="", raw=False)
CASES["2d arrays as keys, lists_as_tuples"] = KEYS.format(n=12000, hostile="dict.fromkeys((x,) for x in " + FLOATS + ")", benign="dict.fromkeys((k + 0.5,) for k in range(n))", opts="lists_as_tuples=True", raw=True)
CASES["5 lists_as_tuples, 7.6 MiB of [[[nil]]] 250 deep"] = r'''
n = (8_000_000 // 251)
hdr = b"\x01\xdd" + n.to_bytes(4, "big") + (b"\x91" * 250 + b"\xc0") * n
d = fastser.Decoder(lists_as_tuples=True)
print(len(hdr), *run(lambda: d.loads([hdr])))
'''
CASES["11 () in a kept payload header, lists_as_tuples"] = r'''
h = {"serializer": "dispatch", "type": "bytes", "e": (), "l": []}
out = fastser.Decoder(deserialize=False, lists_as_tuples=True).loads(fastser.dumps({"k": fastser.Serialized(h, [b"x"]), "t": []}))
print(repr(out["k"].header))
'''
CASES["10 loads(dumps(ToPickle(nest(300))))"] = r'''
x = 1
for _ in range(300): x = [x]
try:
    fastser.loads(fastser.dumps(fastser.ToPickle(x))); print("ok")
except fastser.DeserializationError as e: print("refused:", e)
'''

CASES["3 zlib, 256 MiB stored frame (time / zlib.decompress)"] = r"""
data = bytes(range(256)) * (2**20)
comp = zlib.compress(data, 0)
hdr = b"\x01" + msgpack.packb([msgpack.ExtType(12, b""), {"serializer": "dispatch", "type": "bytes", "compression": ["zlib"]}, [msgpack.ExtType(4, msgpack.packb(1))]])
frames = [hdr, comp]
d = fastser.Decoder(deserializers=fastser.SAFE_DESERIALIZERS)
t0 = time.perf_counter(); zlib.decompress(comp); tz = time.perf_counter() - t0
dt, mb, res = run(lambda: d.loads(frames))
print(len(comp), "%.2fs" % dt, "ratio %.1fx" % (dt / tz), res)
"""
CASES["4 zstd 36 B stating 1 GiB"] = r"""
import zstandard
# a frame header stating 1 GiB (single segment, 4-byte content size), then garbage
fh = b"\x28\xb5\x2f\xfd" + b"\xa0" + (2**30).to_bytes(4, "little")
bomb = fh + b"\x01" * 27
hdr = b"\x01" + msgpack.packb([msgpack.ExtType(12, b""), {"serializer": "dispatch", "type": "bytes", "compression": ["zstd"]}, [msgpack.ExtType(4, msgpack.packb(1))]])
d = fastser.Decoder(deserializers=fastser.SAFE_DESERIALIZERS)
print(len(bomb), *run(lambda: d.loads([hdr, bomb])))
"""
CASES["6 FrameReader, 8 MiB prelude of 2**20 lengths (peak / input)"] = r"""
import tracemalloc
n = 2**20
prelude = n.to_bytes(8, "little") + b"".join((3000 + i % 1000).to_bytes(8, "little") for i in range(n))
tracemalloc.start()
r = fastser.FrameReader()
try:
    for i in range(0, len(prelude), 4093): r.feed(prelude[i:i + 4093])
except fastser.DeserializationError as e: pass
print(len(prelude), "%.2fx" % (tracemalloc.get_traced_memory()[1] / len(prelude)))
"""

for name, code in CASES.items():
    p = subprocess.run([PY, "-P", "-c", PRE + code], capture_output=True, text=True, timeout=600)
    print(f"{name:48s} {p.stdout.strip()} {p.stderr.strip()[-200:]}")

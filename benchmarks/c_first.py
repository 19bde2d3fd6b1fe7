"""A prototype of issue 23's "pack in C first" encoder, timed against its anchors in one
process (interleaved rounds, medians of per-round ratios).

    PY benchmarks/c_first.py [--rounds N] [--only W1,W2,...] [--no-loads] [--checks-only]

PY has msgpack, distributed, numpy, pandas and fastser (compiled, to compare with the
compiled build) installed, and mypy for mypyc: benchmarks/c_first_scan.py, which holds the
prototype's hook, token scan and hit check, is compiled with mypyc into a temporary
directory (about 20 s); without mypyc it runs interpreted and the report says so.

The prototype (c_first_scan.CFirst) packs the message with one reused
`msgpack.Packer(strict_types=True, use_bin_type=True, default=hook)`; the hook writes a
tuple as an array led by -32, a set or frozenset led by its mark, a big int as ext 1, and
anything else through fastser's own `Encoder.encode_object` (records, pickled objects). C
writes silently what fastser's format writes otherwise: bytearray and memoryview (as bin),
ExtType and Timestamp (as ext), bytes-likes of 64 KiB or more (copied, as bin), a list led
by -32 (read back as a tuple), nesting deeper than max_depth. The check proves none is
there, or the message goes to fastser's walk (its `Encoder.dumps`), so the output is what
fastser's decoder reads with fastser's guarantees (written before wire format 1.0 dropped
the map array: a dict of 32 or more entries is a msgpack map here, as it now is in fastser).

Workloads: W1 (one control message, `suite_workloads.control_message`), W2 (a list of 1,000
of them), and every message kind of the traffic corpus (built as
traffic/bench_workloads.py builds them, each codec its own form of the message).

dumps rows, each a median time and the median of its per-round ratios to packb and to
distributed's dumps:
  packb            msgpack.packb(msg): a Packer made per call (n/a: msgpack refuses the
                   message, which holds payload objects)
  Packer           a reused msgpack.Packer().pack(msg)
  distributed      distributed.protocol.dumps as its TCP comm calls it
  fastser          fastser now: the Encoder its comm (or fastser.dumps) uses
  proto scan       the prototype, its check the token scan of every message
  proto bytes      the prototype, a header under 64 KiB first checked for bytes (see
                   CFirst; its depth bound is msgpack's 1024 levels), then scanned
  scan alone       the scan and hit check alone, on the prototype's header (no pack)
  bytes alone      the byte check alone
loads rows (ratios to unpackb bare and to distributed's loads):
  unpackb          msgpack.unpackb of packb's bytes, no hooks (the floor)
  unpackb+hook     unpackb of the prototype's header with the -32 tuple list_hook only
  distributed      distributed.protocol.loads as its TCP comm calls it
  fastser          fastser's decoder on fastser's own frames
  proto            fastser's decoder on the prototype's frames (the same format)
The check table: per workload, whether each check clears the message (a "walk" where the
message holds nothing C flattens is a false positive), and for a batch the share of its
items the byte check alone would send to the scan. The tuple table: W1 and W2 with tuples
as arrays led by -32 (list_hook) vs led by an empty ext mark (ext_hook + list_hook).
"""

import argparse
import gc
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "traffic"))
sys.path.insert(0, str(HERE))

import msgpack  # noqa: E402

import fastser  # noqa: E402
import suite_workloads as workloads  # noqa: E402
from mypyc_module import compiled_module  # noqa: E402
from fastser.codec.encoder import EncodeState, VERSION_BYTE  # noqa: E402
from fastser.codec.packing import FROZENSET_MARK, Packers, SET_MARK, ext  # noqa: E402
from fastser.limits import DEFAULT_MAX_DEPTH  # noqa: E402

Fn = Callable[[], Any]
TUPLE_MARK_CODE = 18  # an unused ext code, for the tuple-as-ext-mark variant


def compiled_scan() -> tuple[Any, str]:
    """c_first_scan compiled with mypyc, and a note; interpreted where mypyc is missing or
    fails."""
    module, problem = compiled_module("c_first_scan")
    return module, "compiled with mypyc" if problem is None else f"NOT COMPILED ({problem})"


SCAN, SCAN_NOTE = compiled_scan()


def prototype(encoder: Any, check: str) -> Any:
    return SCAN.CFirst(encoder, lambda: EncodeState(Packers()), [SET_MARK, FROZENSET_MARK],
                       ext, VERSION_BYTE, DEFAULT_MAX_DEPTH, check)


class Workload:
    """One message, in each codec's form, with each codec's dumps and loads."""

    def __init__(self, name: str, msg: Any, dist_msg: Any, encoder: Any, decoder: Any,
                 dist_dumps: Callable[[Any], list[Any]],
                 dist_loads: Callable[[list[Any]], Any]) -> None:
        self.name = name
        self.msg = msg
        self.encoder = encoder
        self.decoder = decoder
        self.scan = prototype(encoder, "scan")
        self.bytes = prototype(encoder, "bytes")
        self.packer = msgpack.Packer(use_bin_type=True)
        try:
            self.packed: Optional[bytes] = msgpack.packb(msg, use_bin_type=True)
        except (TypeError, ValueError, OverflowError):
            self.packed = None
        self.dist_dumps = lambda: dist_dumps(dist_msg)
        self.dist_frames = workloads.received_distributed_tcp(dist_dumps(dist_msg))
        self.dist_loads = lambda: dist_loads(self.dist_frames)
        self.proto_frames = self.scan.dumps(msg)
        self.body = bytes(self.proto_frames[0])[1:]

    def dumps_fns(self) -> dict[str, Fn]:
        msg, body, scan = self.msg, self.body, self.scan
        fns: dict[str, Fn] = {}
        if self.packed is not None:
            fns["packb"] = lambda: msgpack.packb(msg, use_bin_type=True)
            fns["Packer"] = lambda: self.packer.pack(msg)
        fns["distributed"] = self.dist_dumps
        fns["fastser"] = lambda: self.encoder.dumps(msg)
        fns["proto scan"] = lambda: scan.dumps(msg)
        fns["proto bytes"] = lambda: self.bytes.dumps(msg)
        fns["scan alone"] = lambda: SCAN.all_plain(msg, SCAN.scan(body, 0, DEFAULT_MAX_DEPTH))
        fns["bytes alone"] = lambda: SCAN.bytes_clear(body, scan.tuples)
        return fns

    def loads_fns(self) -> dict[str, Fn]:
        fns: dict[str, Fn] = {}
        packed, body = self.packed, self.body
        if packed is not None:
            fns["unpackb"] = lambda: msgpack.unpackb(packed, strict_map_key=False)
        fns["unpackb+hook"] = lambda: msgpack.unpackb(body, list_hook=SCAN.tuple_lead_hook,
                                                      strict_map_key=False)
        fns["distributed"] = self.dist_loads
        fastser_frames = workloads.received_one_buffer(self.encoder.dumps(self.msg))
        proto_frames = workloads.received_one_buffer(self.proto_frames)
        fns["fastser"] = lambda: self.decoder.loads(fastser_frames)
        fns["proto"] = lambda: self.decoder.loads(proto_frames)
        return fns


def control_workloads() -> list[Workload]:
    dist_dumps, dist_loads = workloads.distributed_codec()
    w1 = workloads.control_message(7)
    w2 = [workloads.control_message(i) for i in range(1000)]
    return [Workload("W1", w1, w1, fastser.Encoder(), fastser.Decoder(), dist_dumps,
                     dist_loads),
            Workload("W2", w2, w2, fastser.Encoder(), fastser.Decoder(), dist_dumps,
                     dist_loads)]


def corpus_workloads() -> list[Workload]:
    import bench_workloads as traffic
    import shapes

    out = []
    for name, entry in traffic.KINDS.items():
        to_scheduler = entry["receiver"] == "scheduler"
        encoder, decoder = traffic.fastser_codec(to_scheduler)
        dist_dumps, dist_loads = traffic.distributed_codec(to_scheduler)
        out.append(Workload(name, shapes.build(entry["shape"], "fastser"),
                            shapes.build(entry["shape"], "distributed"), encoder, decoder,
                            dist_dumps, dist_loads))
    return out


class Tag(str):
    """A str subclass: an "other object", pickled."""


# --- correctness ----------------------------------------------------------------------

def same(a: Any, b: Any) -> bool:
    """a and b equal with their types, containers compared item by item (payload objects
    such as arrays by type and, where it gives a bool, ==)."""
    if type(a) is not type(b):
        return False
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    try:
        equal = a == b
        return equal if type(equal) is bool else True
    except Exception:
        return True


def self_test() -> None:
    """The prototype's output reads back as fastser's own does, for each value C would
    write silently (each must go to the walk) and for plain ones (each must not)."""
    big = bytes(70_000)
    deep: Any = []
    for _ in range(300):
        deep = [deep]
    walked = {
        "bytearray": {"a": bytearray(b"xy")},
        "memoryview": [1, (memoryview(b"xy"),)],
        "ExtType": {"e": msgpack.ExtType(9, b"")},
        "Timestamp": [msgpack.Timestamp(1, 2)],
        "list led by -32": {"l": [-32, 1]},
        "big bytes": {"b": big},
        "big bytes in a tuple": ((big,),),
        "nested list led by -32": {"s": {(1, 2)}, "x": [[-32]]},
        "too deep": deep,
        "non-contiguous memoryview": memoryview(b"abcdef")[::2],
    }
    kept = {
        "bytes": {"type": b"x" * 31, "t": (1, 2)},
        "set and frozenset": {"s": {1, 2}, "f": frozenset({"a"})},
        "big int": [2**70, -(2**70)],
        "a record": {"x": fastser.Serialize([1, 2]), "k": ("a", 1)},
        "tuple keys": {("x", 0): 1, ("x", 1): (2, [3])},
        "a str subclass": {"s": Tag("v")},
    }
    decoder = fastser.Decoder()
    for label, cases in (("walked", walked), ("kept", kept)):
        for name, msg in cases.items():
            proto = prototype(fastser.Encoder(), "scan")
            try:
                expected = decoder.loads(fastser.dumps(msg))
            except fastser.FastserError:
                expected = "error"
            try:
                got = decoder.loads(proto.dumps(msg))
            except fastser.FastserError:
                got = "error"
            if not same(got, expected):
                raise AssertionError(f"{name}: prototype read back {got!r:.200}, "
                                     f"fastser {expected!r:.200}")
            wanted = 1 if label == "walked" else 0
            if proto.walked != wanted:
                raise AssertionError(f"{name}: walked {proto.walked} times, not {wanted}")
    print("self-test: the prototype reads back as fastser for"
          f" {len(walked)} walked and {len(kept)} kept messages")


def check_table(items: list[Workload]) -> None:
    print("\nChecks: does each clear the message? (walk = sent to fastser's walk)")
    print(f"  {'workload':38s} {'bytes':>7s} {'size<64K':>9s} {'bytes check':>12s} "
          f"{'scan+hits':>10s} {'hits':>6s} {'batch items failing byte check':>32s}")
    for w in items:
        body = w.body
        found = SCAN.scan(body, 0, DEFAULT_MAX_DEPTH)
        scan_ok = (not (found.big or found.deep or found.corrupt)
                   and found.leads == w.scan.tuples and SCAN.all_plain(w.msg, found))
        w.bytes.dumps(w.msg)  # sets its tuples and state for this message
        byte_ok = (len(body) < 65536 and w.bytes.state is None
                   and SCAN.bytes_clear(body, w.bytes.tuples))
        share = ""
        if type(w.msg) is list and len(w.msg) > 1:
            failing = 0
            for item in w.msg:
                probe = prototype(w.encoder, "bytes")  # fresh: its hook counts tuples
                item_body = probe.packer.pack(item)
                if not (probe.state is None and SCAN.bytes_clear(item_body, probe.tuples)):
                    failing += 1
            share = f"{failing}/{len(w.msg)}"
        print(f"  {w.name:38s} {len(body):7d} {str(len(body) < 65536):>9s} "
              f"{'clear' if byte_ok else 'walk*':>12s} {'clear' if scan_ok else 'walk':>10s} "
              f"{len(found.hits):6d} {share:>32s}")
    print("  (walk* for the byte check: the message goes on to the scan, not the walk)")


# --- timing ---------------------------------------------------------------------------

def timed(fn: Fn, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def measure(fns: dict[str, Fn], rounds: int) -> dict[str, list[float]]:
    for fn in fns.values():
        fn()
    numbers = {label: max(1, int(0.04 / max(timed(fn, 1), 1e-7))) for label, fn in fns.items()}
    times: dict[str, list[float]] = {label: [] for label in fns}
    labels = list(fns)
    for r in range(rounds):
        gc.collect()
        # rotated each round: no contestant always runs first after the collection
        for label in labels[r % len(labels):] + labels[:r % len(labels)]:
            times[label].append(timed(fns[label], numbers[label]))
    return times


def ratio(times: dict[str, list[float]], label: str, base: str) -> str:
    if label not in times or base not in times:
        return "n/a"
    return f"{statistics.median(a / b for a, b in zip(times[label], times[base])):.2f}"


def report(title: str, base: str, items: list[Workload], make: Callable[[Workload], dict[str, Fn]],
           rounds: int) -> None:
    print(f"\n{title}: median µs per call; ratio to {base} / to distributed (same round)")
    for w in items:
        times = measure(make(w), rounds)
        print(f"  {w.name}")
        for label in times:
            median = statistics.median(times[label]) * 1e6
            print(f"    {label:14s} {median:11.2f} µs  {ratio(times, label, base):>5s}x {base}"
                  f"  {ratio(times, label, 'distributed'):>5s}x distributed")


def tuple_table(rounds: int) -> None:
    """Tuples led by -32 (list_hook) vs by an empty ext mark (ext_hook + list_hook)."""
    mark = msgpack.ExtType(TUPLE_MARK_CODE, b"")

    def lead_hook(obj: Any) -> Any:
        return [-32, *obj]

    def mark_hook(obj: Any) -> Any:
        return [mark, *obj]

    print("\nTuple representation (W1, W2): pack with a Python hook, unpack with the "
          "compiled hooks; ratio to packb / unpackb")
    for name, msg in (("W1", workloads.control_message(7)),
                      ("W2", [workloads.control_message(i) for i in range(1000)])):
        lead = msgpack.Packer(strict_types=True, default=lead_hook)
        marked = msgpack.Packer(strict_types=True, default=mark_hook)
        lead_body, mark_body, plain = lead.pack(msg), marked.pack(msg), msgpack.packb(msg)
        fns: dict[str, Fn] = {
            "packb": lambda: msgpack.packb(msg),
            "pack, -32 lead": lambda: lead.pack(msg),
            "pack, ext mark": lambda: marked.pack(msg),
            "unpackb": lambda: msgpack.unpackb(plain),
            "unpackb, -32 lead": lambda: msgpack.unpackb(lead_body,
                                                         list_hook=SCAN.tuple_lead_hook),
            "unpackb, ext mark": lambda: msgpack.unpackb(
                mark_body, ext_hook=SCAN.tuple_mark_ext_hook,
                list_hook=SCAN.tuple_mark_list_hook),
        }
        times = measure(fns, rounds)
        print(f"  {name}: header {len(lead_body)} bytes with -32 leads, {len(mark_body)} "
              "with ext marks")
        for label in fns:
            base = "packb" if label.startswith("pack") else "unpackb"
            median = statistics.median(times[label]) * 1e6
            print(f"    {label:20s} {median:11.2f} µs  {ratio(times, label, base):>5s}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--only", default="", help="workloads, e.g. 'W1,W2,str'")
    parser.add_argument("--no-loads", action="store_true")
    parser.add_argument("--checks-only", action="store_true", help="the check table alone")
    args = parser.parse_args()
    # distributed logs each Opaque object of the corpus it pickles
    logging.getLogger("distributed.protocol.core").setLevel(logging.WARNING)
    print(f"msgpack {'.'.join(map(str, msgpack.version))}, fastser "
          f"{'compiled' if fastser.COMPILED else 'NOT compiled'}, c_first_scan {SCAN_NOTE}")
    self_test()
    items = control_workloads() + corpus_workloads()
    chosen = {name.strip() for name in args.only.split(",") if name.strip()}
    if chosen:
        items = [w for w in items if w.name in chosen]
    for w in items:
        fastser_back = w.decoder.loads(workloads.received_one_buffer(w.encoder.dumps(w.msg)))
        proto_back = w.decoder.loads(workloads.received_one_buffer(w.proto_frames))
        if not same(proto_back, fastser_back):
            raise AssertionError(f"{w.name}: the prototype's frames read back otherwise")
    gc.disable()
    check_table(items)
    if args.checks_only:
        return
    report("dumps", "packb", items, Workload.dumps_fns, args.rounds)
    if not args.no_loads:
        report("loads", "unpackb", items, Workload.loads_fns, args.rounds)
        tuple_table(args.rounds)
    print("\nmessages the prototypes sent to the walk while timed: " + ", ".join(
        f"{w.name} {w.scan.walked}/{w.bytes.walked}" for w in items if w.scan.walked))


if __name__ == "__main__":
    main()

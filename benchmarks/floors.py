"""The floors under five of issue 4's targets and under the traffic corpus's heartbeat,
timed side by side in one process.

    PY benchmarks/floors.py [--rounds N] [--only 'W3 loads,W1 dumps']

PY has fastser (compiled, to measure the compiled build) and the bench extra installed.

W1 dumps and loads: where a control message's time goes. `Encoder.dumps` and
`Decoder.loads` are the compiled methods the public functions reach (through a partial
and a compiled function that checks the options); `reused Packer.pack` is the packing
alone; `unpackb + no-op hooks` decodes fastser's own W1 header with hooks that do
nothing, `unpackb, no hooks` with none (lists stay lists, where the floor makes tuples:
fastser's bytes decode as fast as the floor's), and
`unpackb + list_hook=tuple` with a C builtin as the list hook: the floor of any decoder
that has msgpack show it each array (how a tuple's lead, a set or a record is seen
inside msgpack's one pass), since msgpack calls a list hook through a generic call with
an argument tuple, whatever the hook.

W3 loads: what its ratio is made of. pickle with out-of-band buffers is the C baseline for
the same arrays; not split (frame_split_size above 100 MiB), the array needs no join; the
join of its two pieces as FrameReader handed them out (known adjacent from where it placed
them), and as unpack_frames did (a slice of the caller's buffer: one ctypes address per
piece and one of their buffer, as a memoryview shows no address); fastser's header decoded
with an ext_hook that does nothing.

W2 dumps: fastser walks the message (out-of-band bytes, nesting depth, types) and packs it
with a Packer it reuses; the floor is msgpack.packb, which builds a Packer per call. `reused
Packer.pack` is the packing alone: on a batch of 1,000 messages the Packer's set-up is spread
thin, so fastser's ratio to the floor is at least 1 + walk / pack.

W1 and W2 dumps, `bare walk + reused Packer`: benchmarks/bare_walk.py, compiled with mypyc
when the first of these groups is built (mypy is in the bench extra), visits every entry
and item and checks its type, building and marking nothing, before the reused Packer packs
the message: the least a mypyc walk over msgpack can cost, so a ratio above 1 there puts
the target out of reach of this design.

W5 loads: a received bytes value must own its memory, so every codec copies each 64 KiB
value once. distributed's values are inline in its msgpack header, where msgpack copies them
in C. fastser's are out-of-band frames named by extension types (zero-copy dumps), so each
costs an ext_hook call. `unpackb + no-op hooks, then copies` is that design's floor: fastser's
own W5 header decoded with hooks that do nothing, then one bytes() per payload frame.

heartbeat dumps and loads: the one kind of the traffic corpus (traffic/corpus) where fastser
is slower than distributed, a worker's heartbeat to the scheduler, built and coded as
traffic/bench.py does (each codec as its comm calls it). It holds 38 tuples (keys of
digests) and a Counter (task_counts), whose types fastser keeps and distributed loses: its
msgpack packs a tuple as an array and a Counter as a map, and reads every array back as a
tuple. `pack keeping tuples` is msgpack alone with the `default` that leads each tuple
(no walk, and the Counter as a plain dict); `pickle of the Counter` is its pickle alone.
Their sum is the least that keeping those types costs. On loads, `unpackb + list_hook=tuple`
decodes fastser's header with a C builtin as the hook (see W1 loads), and the Counter
is unpickled on its own.

Each line: the median time per call, and the median over rounds of its ratio to the first
line of its group, measured in the same round.
"""

import argparse
import gc
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, cast

sys.path.insert(0, str(Path(__file__).resolve().parent))

import msgpack  # noqa: E402

import fastser  # noqa: E402
from suite import BLAS_SINGLE_THREAD  # noqa: E402

os.environ.update(BLAS_SINGLE_THREAD)  # as in suite.py's workers; before numpy is imported
import suite_workloads as workloads  # noqa: E402
from mypyc_module import compiled_module  # noqa: E402


def fill(template: Any, wrap: Callable[[Any], Any]) -> Any:
    if type(template) is dict:
        return {key: fill(value, wrap) for key, value in template.items()}
    if type(template) is list:
        return [fill(item, wrap) for item in template]
    if type(template) is workloads.Payload:
        return wrap(template.data)
    return template


def no_op_ext_hook(code: int, data: bytes) -> Any:
    return data


def no_op_list_hook(items: list[Any]) -> Any:
    return items


def compiled_bare_walk() -> tuple[Callable[[Any], bool], str]:
    """bare_walk.plain compiled with mypyc (about 20 s), and its label; the interpreted one,
    labelled so, where mypyc is missing or fails."""
    module, problem = compiled_module("bare_walk")
    if problem is not None:
        print(f"note: {problem}: bare walk interpreted")
        return module.plain, "bare walk, NOT COMPILED, + Packer"
    return module.plain, "bare walk + reused Packer"


def bare_walk_then(packer: Any, msg: Any) -> Callable[[], Any]:
    walk, label = BARE_WALK[0] if BARE_WALK else compiled_bare_walk()
    BARE_WALK[:] = [(walk, label)]
    if walk(msg) is not True:
        raise RuntimeError("bare_walk found something to change in a plain message")

    def call() -> Any:
        walk(msg)
        return packer.pack(msg)

    return call


BARE_WALK: list[tuple[Callable[[Any], bool], str]] = []


def w1_dumps() -> dict[str, Callable[[], Any]]:
    msg = workloads.control_message(7)
    encoder = fastser.Encoder()
    packer = msgpack.Packer(use_bin_type=True)
    walk_then_pack = bare_walk_then(packer, msg)
    return {
        "msgpack.packb (the floor)": lambda: msgpack.packb(msg, use_bin_type=True),
        "fastser.dumps": lambda: fastser.dumps(msg),
        "Encoder.dumps": lambda: encoder.dumps(msg),
        "reused Packer.pack": lambda: packer.pack(msg),
        BARE_WALK[0][1]: walk_then_pack,
    }


def w1_loads() -> dict[str, Callable[[], Any]]:
    msg = workloads.control_message(7)
    floor = msgpack.packb(msg, use_bin_type=True)
    frames = workloads.received_one_buffer(fastser.dumps(msg))
    header = bytes(frames[0])[1:]  # after the version byte
    decoder = fastser.Decoder()
    return {
        "msgpack.unpackb (the floor)": lambda: msgpack.unpackb(
            floor, raw=False, use_list=False, strict_map_key=False),
        "fastser.loads": lambda: fastser.loads(frames),
        "Decoder.loads": lambda: decoder.loads(frames),
        "unpackb + no-op hooks": lambda: msgpack.unpackb(
            header, ext_hook=no_op_ext_hook, list_hook=no_op_list_hook, raw=False,
            strict_map_key=False),
        "unpackb, no hooks": lambda: msgpack.unpackb(header, strict_map_key=False),
        "unpackb + list_hook=tuple": lambda: msgpack.unpackb(
            header, list_hook=tuple, strict_map_key=False),
    }


def w1_loads_parts() -> dict[str, Callable[[], Any]]:
    """What Decoder.loads does around msgpack's decode, each part called alone (from Python:
    each line carries a call's ~20 ns that the compiled loads does not pay)."""
    from fastser.codec.decoder import DecodeState
    from fastser.codec.depth import holds_ext_minus_1
    from fastser.codec.header import frame_list_of, header_body
    from fastser.limits import DEFAULT_LIMITS

    msg = workloads.control_message(7)
    floor = msgpack.packb(msg, use_bin_type=True)
    frames = workloads.received_one_buffer(fastser.dumps(msg))
    decoder = fastser.Decoder()
    frame_list = frame_list_of(frames)
    body = cast(bytes, header_body(frame_list, DEFAULT_LIMITS)[1])  # a small header: bytes
    return {
        "msgpack.unpackb (the floor)": lambda: msgpack.unpackb(
            floor, raw=False, use_list=False, strict_map_key=False),
        "frames checked, header copied": lambda: header_body(frame_list, DEFAULT_LIMITS),
        "the scan for msgpack timestamps": lambda: holds_ext_minus_1(body, 0),
        "the state the hooks share": lambda: DecodeState(decoder, frame_list),
        "an empty lambda (the call)": lambda: None,
    }


def w5_loads() -> dict[str, Callable[[], Any]]:
    template = workloads.raw_bytes_message()
    _, dist_loads = workloads.distributed_codec()
    dist_dumps, _ = workloads.distributed_codec()
    dist_frames = workloads.received_distributed_tcp(dist_dumps(template))
    frames = workloads.received_one_buffer(fastser.dumps(template))
    header, payload = frames[0][1:], frames[1:]  # the header frame after its version byte

    def floor() -> Any:
        msgpack.unpackb(header, ext_hook=no_op_ext_hook, list_hook=no_op_list_hook,
                        raw=False, strict_map_key=False)
        return [view.tobytes() for view in payload]

    # tobytes(), as fastser's decoder copies (_types.bytes_of): ~10% faster than bytes(view).
    return {
        "distributed loads": lambda: dist_loads(dist_frames),
        "fastser.loads": lambda: fastser.loads(frames),
        "unpackb + no-op hooks, then copies": floor,
        "the copies alone": lambda: [view.tobytes() for view in payload],
        "the copies by bytes()": lambda: [bytes(view) for view in payload],
    }


def w3_loads() -> dict[str, Callable[[], Any]]:
    template = workloads.arrays_message()
    floor = msgpack.packb(workloads.convert(template, lambda data: 1, floor=True),
                          use_bin_type=True)
    msg = workloads.convert(template, fastser.Serialize)
    frames = workloads.received_one_buffer(fastser.dumps(msg))
    unsplit = workloads.received_one_buffer(fastser.dumps(msg, frame_split_size=2**40))
    pickled = workloads.received_one_buffer(
        workloads.pickle_dumps(workloads.convert(template, lambda data: data)))
    header, pieces = frames[0][1:], frames[2:]  # the 100 MiB array's two pieces
    unplaced = fastser.unpack_frames(bytearray(fastser.pack_frames(fastser.dumps(msg))))[2:]
    from fastser.frames.split import join_adjacent  # what loads does to prove them adjacent

    return {
        "msgpack.unpackb (the floor)": lambda: msgpack.unpackb(
            floor, raw=False, use_list=False, strict_map_key=False),
        "fastser.loads": lambda: fastser.loads(frames),
        "pickle.loads + out-of-band buffers": lambda: workloads.pickle_loads(pickled),
        "fastser.loads, the array not split": lambda: fastser.loads(unsplit),
        "unpackb of fastser's header, no hooks": lambda: msgpack.unpackb(
            header, ext_hook=no_op_ext_hook, use_list=False, raw=False, strict_map_key=False),
        "joining the 2 pieces (placed)": lambda: join_adjacent(pieces),
        "joining the 2 pieces (ctypes)": lambda: join_adjacent(unplaced),
    }


def w2_dumps() -> dict[str, Callable[[], Any]]:
    msg = [workloads.control_message(i) for i in range(1000)]
    packer = msgpack.Packer(use_bin_type=True)
    walk_then_pack = bare_walk_then(packer, msg)
    return {
        "msgpack.packb (the floor)": lambda: msgpack.packb(msg, use_bin_type=True),
        "fastser.dumps": lambda: fastser.dumps(msg),
        "reused Packer.pack": lambda: packer.pack(msg),
        BARE_WALK[0][1]: walk_then_pack,
    }


def heartbeat() -> tuple[Any, Any, Any, Any, Any]:
    """The corpus's heartbeat_worker message as each codec is handed it, a copy with its
    Counter as a dict, and the fastser and distributed codecs as their comms to the
    scheduler call them."""
    sys.path.insert(0, str(Path(__file__).resolve().parent / "traffic"))
    import bench_workloads
    import shapes

    shape = bench_workloads.KINDS["heartbeat_worker"]["shape"]
    msg = shapes.build(shape, "fastser")
    plain = dict(msg)
    plain["metrics"] = dict(msg["metrics"])
    plain["metrics"]["task_counts"] = dict(msg["metrics"]["task_counts"])
    return (msg, plain, shapes.build(shape, "distributed"), bench_workloads.fastser_codec(True),
            bench_workloads.distributed_codec(True))


def heartbeat_dumps() -> dict[str, Callable[[], Any]]:
    import pickle

    from fastser.codec.packing import mark_collection

    msg, plain, dist_msg, (encoder, _), (dist_dumps, _) = heartbeat()
    counter = msg["metrics"]["task_counts"]
    packer = msgpack.Packer(autoreset=True, use_bin_type=True, strict_types=True,
                            default=mark_collection)
    return {
        "distributed dumps (the anchor)": lambda: dist_dumps(dist_msg),
        "fastser:// Encoder.dumps": lambda: encoder.dumps(msg),
        "  the same, the Counter a dict": lambda: encoder.dumps(plain),
        "pack keeping tuples (no walk)": lambda: packer.pack(plain),
        "pickle of the Counter": lambda: pickle.dumps(counter, protocol=5),
    }


def heartbeat_loads() -> dict[str, Callable[[], Any]]:
    import pickle

    msg, plain, dist_msg, (encoder, decoder), (dist_dumps, dist_loads) = heartbeat()
    frames = workloads.received_one_buffer(encoder.dumps(msg))
    plain_frames = workloads.received_one_buffer(encoder.dumps(plain))
    dist_frames = workloads.received_distributed_tcp(dist_dumps(dist_msg))
    header = bytes(frames[0])[1:]
    pickled = pickle.dumps(msg["metrics"]["task_counts"], protocol=5)
    return {
        "distributed loads (the anchor)": lambda: dist_loads(dist_frames),
        "fastser:// Decoder.loads": lambda: decoder.loads(frames),
        "  the same, the Counter a dict": lambda: decoder.loads(plain_frames),
        "unpackb + list_hook=tuple": lambda: msgpack.unpackb(
            header, ext_hook=no_op_ext_hook, list_hook=tuple, strict_map_key=False),
        "unpickle the Counter": lambda: pickle.loads(pickled),
    }


def run(name: str, fns: dict[str, Callable[[], Any]], rounds: int) -> None:
    for fn in fns.values():
        fn()
    numbers = {label: max(1, int(0.1 / max(timed(fn, 1), 1e-7))) for label, fn in fns.items()}
    times: dict[str, list[float]] = {label: [] for label in fns}
    for _ in range(rounds):
        for label, fn in fns.items():
            times[label].append(timed(fn, numbers[label]))
    first = next(iter(fns))
    print(name)
    for label in fns:
        ratio = statistics.median(a / b for a, b in zip(times[label], times[first]))
        median = statistics.median(times[label]) * 1e6
        shown = f"{median:10,.2f}" if median < 100 else f"{median:10,.0f}"
        print(f"  {label:36s} {shown} µs   {ratio:5.2f}x")


def timed(fn: Callable[[], Any], number: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--only", default="", help="groups to run, e.g. 'W3 loads,W1 dumps'")
    args = parser.parse_args()
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    if not fastser.COMPILED:
        print("note: fastser is not compiled here")
    gc.disable()  # as in suite.py
    groups = {"W1 dumps": w1_dumps, "W1 loads": w1_loads, "W1 loads parts": w1_loads_parts,
              "W3 loads": w3_loads,
              "W2 dumps": w2_dumps, "W5 loads": w5_loads,
              "heartbeat dumps": heartbeat_dumps, "heartbeat loads": heartbeat_loads}
    unknown = set(chosen) - set(groups)
    if unknown:
        parser.error(f"unknown groups {sorted(unknown)}; choose from {list(groups)}")
    for name, make in groups.items():
        if not chosen or name in chosen:
            run(name, make(), args.rounds)


if __name__ == "__main__":
    main()

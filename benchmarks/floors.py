"""The floors under the suite's targets: the least a design can cost, timed beside fastser in
one process (harness.py's batches, rounds in rotated order; each line's ratio is to the
first line of its group, round by round).

    PY benchmarks/floors.py [--rounds N] [--only 'arrays loads,control-message dumps']

PY has fastser (compiled, to measure the compiled build) and the bench extra installed.
benchmarks/README.md says what each group's lines are. The ones that need a reason:

- `unpackb + list_hook=tuple`: msgpack with a C builtin as the list hook, the floor of any
  decoder that has msgpack show it each array (a tuple's lead, a set, a record), since
  msgpack calls a list hook through a generic call with an argument tuple, whatever the hook.
- `bare walk + reused Packer`: bare_walk.py, compiled with mypyc when the first group that
  needs it is built (mypy is in the bench extra), visits and type-checks every entry and
  item, building and marking nothing, before a reused Packer packs: the least a mypyc walk
  over msgpack can cost, so a ratio above 1 there puts a target out of this design's reach.
- raw-bytes loads: a received bytes value must own its memory, so every codec copies each
  64 KiB value once; distributed's msgpack does it in C, fastser's values are out-of-band
  frames named by extension types (zero-copy dumps), each an ext_hook call.
"""

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent))

import msgpack  # noqa: E402

import fastser  # noqa: E402
from harness import BLAS_SINGLE_THREAD, paired, time_rounds  # noqa: E402

os.environ.update(BLAS_SINGLE_THREAD)  # as in the harness's workers; before numpy is imported
import suite_workloads as workloads  # noqa: E402

HERE = Path(__file__).resolve().parent


def no_op_ext_hook(code: int, data: bytes) -> Any:
    return data


def no_op_list_hook(items: list[Any]) -> Any:
    return items


def compiled_bare_walk() -> tuple[Callable[[Any], bool], str]:
    """bare_walk.plain compiled with mypyc in a temporary directory (about 20 s), and its
    label; the interpreted one, labelled so, where mypyc is missing or fails."""
    import bare_walk

    if importlib.util.find_spec("mypyc") is None:
        print("note: mypyc is not installed (the bench extra has it): bare walk interpreted")
        return bare_walk.plain, "bare walk, NOT COMPILED, + Packer"
    with tempfile.TemporaryDirectory(prefix="fastser-bare_walk-") as build:
        shutil.copy(HERE / "bare_walk.py", build)
        done = subprocess.run([sys.executable, "-m", "mypyc", "bare_walk.py"], cwd=build,
                              capture_output=True, text=True)
        if done.returncode != 0:
            print(f"note: mypyc failed, bare walk interpreted:\n{done.stdout}{done.stderr}")
            return bare_walk.plain, "bare walk, NOT COMPILED, + Packer"
        spec = importlib.util.spec_from_file_location(
            "bare_walk", next(Path(build).glob("bare_walk.*.so")))
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
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


def control_message_dumps() -> dict[str, Callable[[], Any]]:
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


def control_message_loads() -> dict[str, Callable[[], Any]]:
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


def control_message_loads_parts() -> dict[str, Callable[[], Any]]:
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
    size, header = header_body(frame_list, DEFAULT_LIMITS)
    body = cast(bytes, header)  # a small header: bytes
    return {
        "msgpack.unpackb (the floor)": lambda: msgpack.unpackb(
            floor, raw=False, use_list=False, strict_map_key=False),
        "frames checked, header copied": lambda: header_body(frame_list, DEFAULT_LIMITS),
        "the scan for msgpack timestamps": lambda: holds_ext_minus_1(body, 0),
        "the state the hooks share": lambda: DecodeState(decoder, frame_list, size),
        "an empty lambda (the call)": lambda: None,
    }


def raw_bytes_loads() -> dict[str, Callable[[], Any]]:
    template = workloads.raw_bytes_message()
    dist_dumps, dist_loads = workloads.distributed_codec()
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


def arrays_loads() -> dict[str, Callable[[], Any]]:
    template = workloads.arrays_message()
    floor = msgpack.packb(workloads.convert(template, lambda data: 1, floor=True),
                          use_bin_type=True)
    msg = workloads.convert(template, fastser.Serialize)
    frames = workloads.received_one_buffer(fastser.dumps(msg))
    unsplit = workloads.received_one_buffer(fastser.dumps(msg, frame_split_size=2**40))
    pickled = workloads.received_one_buffer(
        workloads.pickle_dumps(workloads.convert(template, lambda data: data)))
    header, pieces = frames[0][1:], cast(list[Any], frames[2:])  # the 100 MiB array's pieces
    unplaced = cast(list[Any], fastser.unpack_frames(
        bytearray(fastser.pack_frames(fastser.dumps(msg))))[2:])
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


def batch_dumps() -> dict[str, Callable[[], Any]]:
    msg = [workloads.control_message(i) for i in range(1000)]
    packer = msgpack.Packer(use_bin_type=True)
    walk_then_pack = bare_walk_then(packer, msg)
    return {
        "msgpack.packb (the floor)": lambda: msgpack.packb(msg, use_bin_type=True),
        "fastser.dumps": lambda: fastser.dumps(msg),
        "reused Packer.pack": lambda: packer.pack(msg),
        BARE_WALK[0][1]: walk_then_pack,
    }


def run(name: str, fns: dict[str, Callable[[], Any]], rounds: int) -> None:
    times = time_rounds(fns, rounds)
    first = next(iter(fns))
    print(name)
    for label in fns:
        median = statistics.median(times[label]) * 1e6
        shown = f"{median:10,.2f}" if median < 100 else f"{median:10,.0f}"
        print(f"  {label:36s} {shown} µs   {paired(times[label], times[first]):5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--only", default="",
                        help="groups to run, e.g. 'arrays loads,control-message dumps'")
    args = parser.parse_args()
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    if not fastser.COMPILED:
        print("note: fastser is not compiled here")
    groups = {"control-message dumps": control_message_dumps,
              "control-message loads": control_message_loads,
              "control-message loads parts": control_message_loads_parts,
              "arrays loads": arrays_loads, "batch-of-1000 dumps": batch_dumps,
              "raw-bytes loads": raw_bytes_loads}
    unknown = set(chosen) - set(groups)
    if unknown:
        parser.error(f"unknown groups {sorted(unknown)}; choose from {list(groups)}")
    for name, make in groups.items():
        if not chosen or name in chosen:
            run(name, make(), args.rounds)


if __name__ == "__main__":
    main()

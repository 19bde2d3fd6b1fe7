"""How the fastser:// comm receives a message, against the alternatives: the round trip of one
message of arrays to a receiver process, over tcp://, over fastser:// as it is (one buffer per
message, transport.receive_buffer's; a read per frame of up to 1 MiB), and over fastser://
as it was: with a read per run of adjacent frames (of up to 1 GiB, or of up to 1 MiB), into
numpy.empty's buffer at every size, or without the mmap's pages faulted in ahead of each
read (transport.receive_buffer.populate), interleaved. On a fresh machine; a cluster whose
memory has been churned (benchmarks/cluster.py's full run) may rank them otherwise.

    python benchmarks/comm_receive.py [--rounds 20] [--shapes 50x1048576,5x8000000]

Each shape is COUNTxBYTES: a message {"op": "update_data", "data": {key: array}} of COUNT
float64 arrays of BYTES bytes (distributed's Serialize, as a scatter sends them), answered
by a small message once the receiver, which opens the arrays as a worker does, has it.
Reports the median round trip per receiver, and the median over rounds of tcp:// / it.
Needs the dask extra and numpy; uses the fastser that `import fastser` finds.
"""

import argparse
import asyncio
import multiprocessing
import os
import statistics
import struct
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import paired, rotated  # noqa: E402

RECEIVERS = ("tcp://", "fastser://", "fastser:// a read per run", "fastser:// 1 MiB per run",
             "fastser:// numpy.empty", "fastser:// not populated")
SHAPES = "50x1048576,5x8000000,1x100000000,1x40000000,10x100000,200x65536"


def alternative_reader(receiver: str) -> Any:
    """fastser.dask.comm.read_frames as `receiver` names it: with a read per run of adjacent
    frames of up to 1 GiB or of up to READ_BYTES, into numpy.empty's buffer at every size
    (transparent huge pages from 4 MiB on), or with no populate before each read.
    fastser.dask is never compiled, so the receiver's module attribute can be replaced."""
    import numpy
    from fastser.frames.stream import (COUNT, WORD, check_count, check_lengths, frame_layout,
                                       frame_runs, frame_start, slice_frames)
    from fastser.transport.receive_buffer import READ_BYTES, populate, receive_buffer

    async def read_frames(stream: Any, limits: Any) -> list[memoryview]:
        count = check_count(COUNT.unpack_from(await stream.read_bytes(WORD), 0)[0], limits)
        lengths: tuple[int, ...] = ()
        if count:
            lengths = struct.unpack_from(f"<{count}Q", await stream.read_bytes(WORD * count))
        check_lengths(lengths, limits)
        gaps, size = frame_layout(lengths)
        if receiver.endswith("numpy.empty"):
            view = memoryview(numpy.empty(size, numpy.uint8))
        else:
            view = receive_buffer(size)
        if receiver.endswith("a read per run"):  # as the comm read before READ_BYTES
            spans, step = frame_runs(lengths), 2**30
        elif receiver.endswith("1 MiB per run"):
            spans, step = frame_runs(lengths), READ_BYTES
        else:  # as the comm reads: a read per frame, of up to READ_BYTES
            spans, step, end = [], READ_BYTES, 0
            for length in lengths:
                start = frame_start(end, length)
                end = start + length
                spans.append((start, end))
        for start, stop in spans:
            for piece in range(start, stop, step):
                if not receiver.endswith("not populated"):
                    populate(view, piece, min(piece + step, stop))
                await stream.read_into(view[piece:min(piece + step, stop)])
        return slice_frames(view, lengths, 0, gaps, True)
    return read_frames


def receive(receiver: str, addresses: Any) -> None:
    import fastser.dask.comm
    from distributed.comm.core import listen
    if receiver.startswith("fastser:// "):
        setattr(fastser.dask.comm, "read_frames", alternative_reader(receiver))

    async def serve() -> None:
        async def handle(comm: Any) -> None:
            try:
                while True:
                    msg = await comm.read()
                    await comm.write({"op": "ok", "count": len(msg["data"])})
                    del msg
            except Exception:  # the sender closed the comm: done
                pass

        scheme = receiver.split()[0]
        async with listen(scheme + "127.0.0.1:0", handle) as listener:
            addresses.put(listener.contact_address)
            await asyncio.sleep(3600)
    asyncio.run(serve())


async def send(addresses: dict[str, str], shapes: list[tuple[int, int]],
               rounds: int) -> dict[tuple[int, int], dict[str, list[float]]]:
    import numpy
    from distributed.comm.core import connect
    from distributed.protocol.serialize import Serialize

    comms = {receiver: await connect(address) for receiver, address in addresses.items()}
    times: dict[tuple[int, int], dict[str, list[float]]] = {}
    for count, size in shapes:
        arrays = [numpy.full(size // 8, float(i)) for i in range(count)]
        times[count, size] = {receiver: [] for receiver in comms}
        for round_ in range(rounds + 2):  # the first two warm up
            for receiver in rotated([[receiver] for receiver in comms], round_):
                msg = {"op": "update_data",
                       "data": {f"x-{round_}-{i}": Serialize(a) for i, a in enumerate(arrays)}}
                start = time.perf_counter()
                await comms[receiver].write(msg)
                await comms[receiver].read()
                if round_ >= 2:
                    times[count, size][receiver].append(time.perf_counter() - start)
    for comm in comms.values():
        await comm.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--shapes", default=SHAPES)
    args = parser.parse_args()
    shapes = [(int(count), int(size)) for count, size in
              (shape.split("x") for shape in args.shapes.split(","))]
    context = multiprocessing.get_context("spawn")
    addresses: dict[str, str] = {}
    processes = []
    for receiver in RECEIVERS:
        queue = context.Queue()
        process = context.Process(target=receive, args=(receiver, queue), daemon=True)
        process.start()
        processes.append(process)
        addresses[receiver] = queue.get(timeout=60)
    try:
        times = asyncio.run(send(addresses, shapes, args.rounds))
    finally:
        for process in processes:
            process.terminate()
    print(f"medians of {args.rounds} interleaved rounds; ratio: tcp:// / this (above 1: faster)")
    print(f"{'message':>22s}" + "".join(f"{receiver:>26s}" for receiver in RECEIVERS))
    for (count, size), by_receiver in times.items():
        cells = []
        for receiver in RECEIVERS:
            ratio = paired(by_receiver["tcp://"], by_receiver[receiver])
            cells.append(f"{statistics.median(by_receiver[receiver]) * 1e3:10.2f} ms "
                         f"{ratio:5.2f}x")
        print(f"{f'{count} x {size:,} B':>22s}" + "".join(f"{cell:>26s}" for cell in cells))


if __name__ == "__main__":
    main()

"""How the fastser:// comm receives a message, against the alternatives: the round trip of one
message of arrays to a receiver process, over tcp://, over fastser:// as it is (one buffer per
message, transport.receive_buffer's; a read per frame of up to 1 MiB), and over fastser://
as it was or might be: with a read per run of adjacent frames (of up to 1 GiB, or of up to
1 MiB), into an mmap of shared memory from 32 MiB on, into numpy.empty's buffer at every size,
with a buffer of its own for each payload of 1 MiB or more (as tcp:// does; a split
payload's pieces end to end in theirs), or without the mmap's pages faulted in ahead of each
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
import statistics
import struct
import time
from typing import Any

RECEIVERS = ("tcp://", "fastser://", "fastser:// a read per run", "fastser:// 1 MiB per run",
             "fastser:// shared mmap", "fastser:// numpy.empty", "fastser:// a buffer per payload",
             "fastser:// not populated")
SHAPES = "50x1048576,5x8000000,1x100000000,1x40000000,10x100000,200x65536"
OWN_BUFFER_BYTES = 2**20  # the smallest payload given a buffer of its own


def payload_layout(lengths: Any, split_size: int) -> tuple[list[int], list[tuple[int, int]]]:
    """Buffer sizes, and each frame's (buffer, offset): frames of OWN_BUFFER_BYTES or more
    after the header get a buffer each, and the frame after a piece of exactly
    split_frames' size goes right after it; the others share buffer 0."""
    from fastser.buffers import FRAME_ALIGNMENT
    from fastser.frames.stream import frame_start
    piece = split_size - split_size % FRAME_ALIGNMENT or split_size
    sizes, places, continued = [0], [], False
    for length in lengths:
        if continued:
            buffer, start = len(sizes) - 1, sizes[-1]
        elif length >= OWN_BUFFER_BYTES and places:
            sizes.append(0)
            buffer, start = len(sizes) - 1, 0
        else:
            buffer, start = 0, frame_start(sizes[0], length)
        places.append((buffer, start))
        sizes[buffer] = start + length
        continued = length == piece and buffer > 0
    return sizes, places


def alternative_reader(receiver: str) -> Any:
    """fastser.dask.read_frames as `receiver` names it: with a read per run of adjacent
    frames of up to 1 GiB or of up to READ_BYTES, into an mmap of shared memory from 32 MiB
    on, into numpy.empty's buffer at every size (transparent huge pages from 4 MiB on), into
    a buffer per payload, or with no populate before each read. fastser.dask is never
    compiled, so the receiver's module attribute can be replaced."""
    import mmap

    import numpy
    from distributed.comm.tcp import TCP
    from fastser.frames.placed import PLACED_MIN_BYTES, place
    from fastser.frames.stream import (COUNT, WORD, check_count, check_lengths, frame_layout,
                                       frame_runs, frame_start, slice_frames)
    from fastser.transport.receive_buffer import READ_BYTES, populate, receive_buffer

    async def read_frames(stream: Any, limits: Any) -> list[memoryview]:
        count = check_count(COUNT.unpack_from(await stream.read_bytes(WORD), 0)[0], limits)
        lengths: tuple[int, ...] = ()
        if count:
            lengths = struct.unpack_from(f"<{count}Q", await stream.read_bytes(WORD * count))
        check_lengths(lengths, limits)
        if receiver.endswith("a buffer per payload"):
            sizes, places = payload_layout(lengths, TCP.max_shard_size)
            buffers = [receive_buffer(size) for size in sizes]
            frames: list[memoryview] = []
            placed, before = False, (-1, -1)
            for length, (buffer, start) in zip(lengths, places):
                frame = buffers[buffer][start:start + length]
                for offset in range(0, length, READ_BYTES):
                    populate(buffers[buffer], start + offset,
                             start + min(offset + READ_BYTES, length))
                    await stream.read_into(frame[offset:offset + READ_BYTES])
                placed = length >= PLACED_MIN_BYTES or (placed and before == (buffer, start))
                if placed:
                    place(frame, start, start + length)
                frames.append(frame)
                before = (buffer, start + length)
            return frames
        gaps, size = frame_layout(lengths)
        if receiver.endswith("shared mmap") and size >= 32 * 2**20:
            view = memoryview(mmap.mmap(-1, size))
        elif receiver.endswith("numpy.empty"):
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
    import fastser.dask
    from distributed.comm.core import listen
    if receiver.startswith("fastser:// "):
        setattr(fastser.dask, "read_frames", alternative_reader(receiver))

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
            order = list(comms)[round_ % len(comms):] + list(comms)[:round_ % len(comms)]
            for receiver in order:
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
            ratio = statistics.median(
                a / b for a, b in zip(by_receiver["tcp://"], by_receiver[receiver]))
            cells.append(f"{statistics.median(by_receiver[receiver]) * 1e3:10.2f} ms {ratio:5.2f}x")
        print(f"{f'{count} x {size:,} B':>22s}" + "".join(f"{cell:>26s}" for cell in cells))


if __name__ == "__main__":
    main()

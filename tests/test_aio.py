"""fastser.aio over real loopback TCP (asyncio.start_server): messages arrive equal and in
order, large arrays arrive as read-only views of the one bytes object the StreamReader hands
out, a stream cut inside a message is a FrameError (before one, an EOFError), and hostile
preludes are refused before anything is read or allocated. Every test runs under
asyncio.wait_for, so a bug fails instead of hanging."""

import asyncio
import mmap
import socket
import struct
import tracemalloc
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import numpy as np
import pytest
from strategies import rounds
from streams import (BIG_ITEMS, CUT_MESSAGE, CUTS, HOSTILE, SMALL_ITEMS, MiB, check_aligned,
                     check_compressed, check_large_arrays, compressed_messages,
                     misaligning_message, mutated, owner_of, small_message, stream_to_mutate)

from fastser import Decoder, Encoder, FrameError, Limits, dumps, pack_frames
from fastser.aio import read_msg, write_msg

TIMEOUT = 20.0  # seconds for a whole test
T = TypeVar("T")


def run(scenario: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(asyncio.wait_for(scenario, TIMEOUT))


@dataclass
class Loopback:
    client_reader: asyncio.StreamReader
    client_writer: asyncio.StreamWriter
    server_reader: asyncio.StreamReader
    server_writer: asyncio.StreamWriter


@asynccontextmanager
async def loopback() -> AsyncIterator[Loopback]:
    """A client connected over 127.0.0.1 to a server started on a port the OS chose."""
    accepted: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accepted.put((reader, writer))

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    try:
        port = server.sockets[0].getsockname()[1]
        client_reader, client_writer = await asyncio.open_connection("127.0.0.1", port)
        server_reader, server_writer = await accepted.get()
        try:
            yield Loopback(client_reader, client_writer, server_reader, server_writer)
        finally:
            for writer in (client_writer, server_writer):
                writer.close()
                try:
                    await writer.wait_closed()
                except ConnectionError:
                    pass  # a test reset it
    finally:
        server.close()
        await server.wait_closed()


async def close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    await writer.wait_closed()


def reset(writer: asyncio.StreamWriter) -> None:
    """Close with an RST instead of a FIN (SO_LINGER on, timeout 0)."""
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def test_many_small_messages_arrive_equal_and_in_order() -> None:
    messages = [small_message(i) for i in range(500)]

    async def scenario() -> tuple[list[int], list[Any]]:
        async with loopback() as pair:
            async def send_all() -> list[int]:
                return [await write_msg(pair.client_writer, msg) for msg in messages]

            async def read_all() -> list[Any]:
                return [await read_msg(pair.server_reader) for _ in messages]

            sent, received = await asyncio.gather(send_all(), read_all())
            await close(pair.client_writer)
            with pytest.raises(EOFError) as info:
                await read_msg(pair.server_reader)
            assert type(info.value) is EOFError  # a clean end between messages
            return sent, received

    sent, received = run(scenario())
    assert received == messages
    assert sent == [len(pack_frames(dumps(msg))) for msg in messages]


def test_mixed_compression_on_one_stream() -> None:
    messages = compressed_messages()

    async def scenario() -> list[Any]:
        async with loopback() as pair:
            async def send_all() -> None:
                for encoder, msg in messages:
                    await write_msg(pair.client_writer, msg, encoder)

            async def read_all() -> list[Any]:
                return [await read_msg(pair.server_reader) for _ in messages]

            received: list[Any] = (await asyncio.gather(send_all(), read_all()))[1]
            return received

    for i, received in enumerate(run(scenario())):
        check_compressed(received, i)


def test_encoder_and_decoder_options_are_used() -> None:
    limits = Limits(max_frames=1)

    async def scenario() -> None:
        async with loopback() as pair:
            await write_msg(pair.client_writer, {"x": 1}, Encoder(serializers=("pickle",)))
            assert await read_msg(pair.server_reader, Decoder(limits=limits)) == {"x": 1}
            await write_msg(pair.client_writer, [b"a" * 100_000])  # two frames
            with pytest.raises(FrameError, match="max_frames=1"):
                await read_msg(pair.server_reader, Decoder(limits=limits))

    run(scenario())


def test_arrays_arrive_aligned_after_odd_frames_and_split_pieces_stay_adjacent() -> None:
    encoder, msg = misaligning_message()

    async def scenario() -> Any:
        async with loopback() as pair:
            _, received = await asyncio.gather(write_msg(pair.client_writer, msg, encoder),
                                               read_msg(pair.server_reader))
            return received

    received = run(scenario())
    check_aligned(received)
    # The complex array was split (into pieces of a multiple of 16 bytes) into the one
    # receive buffer: its pieces were joined in place (a copy would be a bytearray of its own).
    owner = owner_of(received["c16"])
    assert type(owner) is np.ndarray and owner_of(received["f8"]) is owner


class RecordingWriter:
    """Stands in for a StreamWriter and records what write_msg does with it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def write(self, data: Any) -> None:
        self.calls.append(("write", data))

    async def drain(self) -> None:
        self.calls.append(("drain", None))


def test_frames_are_written_one_by_one_without_copies() -> None:
    big = np.ones(3 * MiB, dtype=np.uint8)
    medium = bytearray(b"m" * 100_000)
    msg = {"big": big, "medium": memoryview(medium), "small": b"s" * 10}
    recorder = RecordingWriter()
    written = run(write_msg(cast(asyncio.StreamWriter, recorder), msg))
    frames = dumps(msg)
    assert written == len(pack_frames(frames))
    kinds = [kind for kind, _ in recorder.calls]
    writes = [data for kind, data in recorder.calls if kind == "write"]
    assert b"".join(writes) == pack_frames(frames)
    # Small frames ride with the prelude; each large frame is written as a view of the
    # caller's memory, and the writer is drained after each frame of 1 MiB or more.
    at_big = next(i for i, (kind, data) in enumerate(recorder.calls)
                  if kind == "write" and len(data) == big.nbytes)
    assert np.shares_memory(np.frombuffer(recorder.calls[at_big][1], dtype=np.uint8), big)
    medium_write = next(data for data in writes if len(data) == len(medium))
    assert isinstance(medium_write, memoryview) and medium_write.obj is medium
    assert kinds[at_big + 1] == "drain" and kinds[-1] == "drain" and kinds.count("drain") == 2
    assert len(writes[0]) < 1000  # the prelude, with the header and other small frames


def test_writer_is_drained_every_mib() -> None:
    msg = [bytes([i]) * 70_000 for i in range(100)]  # 100 frames, each under 1 MiB
    recorder = RecordingWriter()
    written = run(write_msg(cast(asyncio.StreamWriter, recorder), msg))
    assert written == len(pack_frames(dumps(msg)))
    since_drain, most = 0, 0
    for kind, data in recorder.calls:
        since_drain = since_drain + len(data) if kind == "write" else 0
        most = max(most, since_drain)
    assert MiB <= most < MiB + 70_000 and recorder.calls[-1][0] == "drain"


@dataclass
class LargeTransfer:
    msg: dict[str, Any]
    sent: int


@pytest.fixture(scope="module")
def large() -> Iterator[LargeTransfer]:
    """One message with arrays of 1 MiB and 200 MiB, split into 64 MiB pieces, sent once for
    the tests below. The sender's arrays are dropped before the tests look at the result."""
    msg = {"small": np.arange(SMALL_ITEMS, dtype=np.float64),
           "big": np.arange(BIG_ITEMS, dtype=np.float64), "tag": "two arrays"}
    encoder = Encoder(frame_split_size=64 * MiB)

    async def scenario(msg: Any) -> tuple[int, Any]:  # an argument: the del below drops it
        async with loopback() as pair:
            return await asyncio.gather(write_msg(pair.client_writer, msg, encoder),
                                        read_msg(pair.server_reader))

    sent, received = run(scenario(msg))
    del msg
    yield LargeTransfer(received, sent)


@pytest.mark.large
def test_large_arrays_arrive_equal(large: LargeTransfer) -> None:
    check_large_arrays(large.msg, large.sent)


@pytest.mark.large
def test_large_arrays_are_views_of_one_receive_buffer(large: LargeTransfer) -> None:
    small, big = large.msg["small"], large.msg["big"]
    assert small.flags.writeable and big.flags.writeable
    owner = owner_of(small)
    assert type(owner) is mmap.mmap and len(owner) < 201 * MiB + 4096
    assert owner_of(big) is owner  # the four 64 MiB pieces were joined without a copy
    whole = np.frombuffer(owner, dtype=np.uint8)
    assert np.shares_memory(small, whole) and np.shares_memory(big, whole)


@pytest.mark.parametrize("cut, error", CUTS, ids=["count", "lengths", "header", "payload"])
def test_stream_ending_inside_a_message_is_a_frame_error(cut: int, error: str) -> None:
    async def scenario() -> None:
        async with loopback() as pair:
            pair.client_writer.write(CUT_MESSAGE[:cut])
            await close(pair.client_writer)
            with pytest.raises(FrameError, match="the stream ended " + error) as info:
                await read_msg(pair.server_reader)
            assert isinstance(info.value.__cause__, EOFError)

    run(scenario())


def test_stream_ending_between_messages_is_eof() -> None:
    async def scenario() -> None:
        async with loopback() as pair:
            pair.client_writer.write(CUT_MESSAGE * 2)
            await close(pair.client_writer)
            for _ in range(2):
                assert await read_msg(pair.server_reader) == {"x": b"p" * 100_000}
            with pytest.raises(EOFError) as info:
                await read_msg(pair.server_reader)
            assert type(info.value) is EOFError

    run(scenario())


def test_connection_reset_inside_a_message_is_a_frame_error() -> None:
    async def scenario() -> None:
        async with loopback() as pair:
            reading = asyncio.ensure_future(read_msg(pair.server_reader))
            pair.client_writer.write(CUT_MESSAGE[:12])  # the count and half a length
            await pair.client_writer.drain()
            await asyncio.sleep(0.2)  # let read_msg take the count before the reset
            reset(pair.client_writer)
            with pytest.raises(FrameError, match="connection was reset inside the prelude: 12 "
                               "of 24 bytes") as info:
                await reading
            assert isinstance(info.value.__cause__, ConnectionResetError)

    run(scenario())


def test_connection_reset_between_messages_is_the_streams_error() -> None:
    async def scenario() -> None:
        async with loopback() as pair:
            reset(pair.client_writer)
            with pytest.raises(ConnectionResetError):
                await read_msg(pair.server_reader)

    run(scenario())


async def peak_allocation_of_read(pair: Loopback, decoder: Decoder, error: str) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        with pytest.raises(FrameError, match=error):
            await read_msg(pair.server_reader, decoder)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("prelude, error", HOSTILE,
                         ids=["count", "not fastser", "length", "total", "views"])
def test_hostile_preludes_are_refused_without_allocating(prelude: bytes, error: str) -> None:
    async def scenario() -> int:
        async with loopback() as pair:
            pair.client_writer.write(prelude + b"\x00" * 64)
            await pair.client_writer.drain()
            return await peak_allocation_of_read(pair, Decoder(), error)

    assert run(scenario()) < MiB


def test_custom_limits_are_checked_before_the_lengths_are_read() -> None:
    decoder = Decoder(limits=Limits(max_frames=10, max_message_bytes=1000))

    async def scenario() -> None:
        async with loopback() as pair:
            pair.client_writer.write(struct.pack("<Q", 11))  # no lengths: never awaited
            with pytest.raises(FrameError, match="max_frames=10"):
                await read_msg(pair.server_reader, decoder)
            pair.client_writer.write(struct.pack("<3Q", 2, 600, 600))
            with pytest.raises(FrameError, match="1200 bytes.*max_message_bytes=1000"):
                await read_msg(pair.server_reader, decoder)

    run(scenario())


def test_valid_huge_prelude_allocates_only_what_arrives() -> None:
    prelude = struct.pack("<4Q", 3, 2**30, 2**30, 2**30)  # 3 GiB: within the default Limits

    async def scenario() -> int:
        async with loopback() as pair:
            pair.client_writer.write(prelude + b"\x00" * 1000)
            await close(pair.client_writer)
            return await peak_allocation_of_read(
                pair, Decoder(), "header frame .*: 1000 of the 3221225472")

    assert run(scenario()) < MiB


def test_mutated_streams_give_only_fastser_errors_or_messages() -> None:
    import random

    from fastser import SAFE_DESERIALIZERS, DeserializationError

    rng = random.Random(11)
    safe = Decoder(deserializers=SAFE_DESERIALIZERS)
    good = stream_to_mutate()
    outcomes = {"messages": 0, "errors": 0}

    async def one_stream(data: bytes) -> None:
        async with loopback() as pair:
            pair.client_writer.write(data)
            await close(pair.client_writer)
            while True:
                try:
                    await read_msg(pair.server_reader, safe)
                    outcomes["messages"] += 1
                except EOFError:
                    return  # a clean end between messages
                except DeserializationError:  # FrameError included
                    outcomes["errors"] += 1
                    return  # the stream is unusable after an error

    async def scenario() -> None:
        for _ in range(rounds(100, 2_000)):
            await one_stream(bytes(mutated(rng, good)))

    asyncio.run(asyncio.wait_for(scenario(), 10 * TIMEOUT))
    assert outcomes["errors"] > 0 and outcomes["messages"] > 0

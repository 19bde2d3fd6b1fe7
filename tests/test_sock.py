"""fastser.sock over real loopback TCP: messages arrive equal and in order, large arrays are
received into one buffer and never copied after the read, a stream cut inside a message is a
FrameError (before one, an EOFError), and hostile preludes are refused before anything is
allocated. Every socket has a timeout, so a bug fails instead of hanging."""

import ctypes
import functools
import json
import mmap
import os
import socket
import struct
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from fastser import Decoder, Encoder, Frame, FrameError, Limits, dumps, pack_frames
from strategies import rounds
from streams import (BIG_ITEMS, CUT_MESSAGE, CUTS, HOSTILE, SMALL_ITEMS, MiB, check_aligned,
                     check_compressed, check_large_arrays, compressed_messages,
                     misaligning_message, mutated, owner_of, peak_allocation,
                     peak_rss_growth, rss_bytes, small_message, stream_to_mutate)

from fastser.frames.stream import COALESCE_BYTES, coalesce
from fastser.transport.receive_buffer import BYTEARRAY_BYTES, MMAP_BYTES, populate, receive_buffer
from fastser.transport.sock import MAX_IOV, sendall_each, sendmsg_all
from fastser.sock import recv_msg, send_msg

TIMEOUT = 10.0  # seconds; every socket here times out rather than hang the suite


@contextmanager
def loopback(client_class: type[socket.socket] = socket.socket,
             ) -> Iterator[tuple[socket.socket, socket.socket]]:
    """A (client, server) pair of TCP sockets connected over 127.0.0.1."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = client_class(socket.AF_INET, socket.SOCK_STREAM)
        client.settimeout(TIMEOUT)
        client.connect(listener.getsockname())
        server, _ = listener.accept()
    server.settimeout(TIMEOUT)
    with client, server:
        yield client, server


@contextmanager
def in_thread(action: Callable[[], Any]) -> Iterator["Future[Any]"]:
    """Runs `action` in a thread (the sender, while this thread receives)."""
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(action)
        yield future
        future.result(timeout=3 * TIMEOUT)  # re-raises what the sender raised


def test_many_small_messages_arrive_equal_and_in_order() -> None:
    messages = [small_message(i) for i in range(500)]
    with loopback() as (client, server):
        def send_all() -> list[int]:
            return [send_msg(client, msg) for msg in messages]
        with in_thread(send_all) as sent:
            received = [recv_msg(server) for _ in messages]
        assert received == messages
        assert sent.result() == [len(pack_frames(dumps(msg))) for msg in messages]
        client.close()
        with pytest.raises(EOFError) as info:
            recv_msg(server)
        assert type(info.value) is EOFError  # a clean end between messages


def test_mixed_compression_on_one_stream() -> None:
    messages = compressed_messages()
    with loopback() as (client, server):
        def send_all() -> list[int]:
            return [send_msg(client, msg, encoder) for encoder, msg in messages]
        with in_thread(send_all) as sent:
            for i in range(len(messages)):
                check_compressed(recv_msg(server), i)
    plain = len(pack_frames(dumps(messages[0][1])))
    assert sent.result()[1] < plain / 3  # lz4 shrank it


def test_encoder_and_decoder_options_are_used() -> None:
    limits = Limits(max_frames=1)
    with loopback() as (client, server):
        send_msg(client, {"x": 1}, Encoder(serializers=("pickle",)))
        assert recv_msg(server, Decoder(limits=limits)) == {"x": 1}
        send_msg(client, [b"a" * 100_000])  # two frames
        with pytest.raises(FrameError, match="max_frames=1"):
            recv_msg(server, Decoder(limits=limits))


def test_small_message_frames_are_writeable_views_of_one_buffer() -> None:
    msg: dict[str, Any] = {"view": memoryview(bytearray(b"v" * 100_000)),
                           "array": np.arange(10_000, dtype=np.int64)}
    with loopback() as (client, server):
        send_msg(client, msg)
        received = recv_msg(server)
    view, array = received["view"], received["array"]
    assert bytes(view) == b"v" * 100_000 and np.array_equal(array, msg["array"])
    owner = view.obj
    assert type(owner) is np.ndarray  # numpy is loaded: numpy.empty's buffer
    assert owner_of(array) is owner
    assert not view.readonly and array.flags.writeable
    view[0:1] = b"V"  # writes land in the receive buffer
    assert b"V" + b"v" * 99_999 in owner.tobytes()


def test_receive_buffers_numpy_when_loaded_else_a_bytearray_and_an_mmap_when_large(
        monkeypatch: pytest.MonkeyPatch) -> None:
    owner: object = receive_buffer(MMAP_BYTES - 1).obj
    assert type(owner) is np.ndarray
    assert type(receive_buffer(MMAP_BYTES).obj) is mmap.mmap
    monkeypatch.setitem(sys.modules, "numpy", None)  # as in a process that never loaded it
    # A bytearray is zeroed (committed) as it is made: only while that costs little.
    assert type(receive_buffer(BYTEARRAY_BYTES - 1).obj) is bytearray
    assert type(receive_buffer(BYTEARRAY_BYTES).obj) is mmap.mmap
    assert type(receive_buffer(MMAP_BYTES).obj) is mmap.mmap


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="Linux: /proc/self/maps")
def test_large_receive_buffers_are_private_memory() -> None:
    # Shared anonymous memory (mmap's default for fileno -1) faults in slower.
    buffer = receive_buffer(MMAP_BYTES)
    start = ctypes.addressof(ctypes.c_char.from_buffer(buffer))
    with open("/proc/self/maps") as maps:
        for line in maps:
            span, perms = line.split()[:2]
            low, high = (int(bound, 16) for bound in span.split("-"))
            if low <= start < high:
                assert perms == "rw-p", line
                assert high - start >= MMAP_BYTES
                break
        else:
            raise AssertionError(f"no mapping holds {start:#x}")


def linux_at_least(major: int, minor: int) -> bool:
    release = os.uname().release.split(".")
    return sys.platform == "linux" and (int(release[0]), int(release[1].split("-")[0])) >= (
        major, minor)


@pytest.mark.skipif(not linux_at_least(5, 14), reason="MADV_POPULATE_WRITE: Linux 5.14")
def test_populate_faults_in_the_span_asked_for_and_no_more() -> None:
    buffer = receive_buffer(MMAP_BYTES)
    before = rss_bytes()
    populate(buffer, 4 * MiB + 100, 12 * MiB)  # an unaligned start: madvise's is aligned
    grown = rss_bytes() - before
    assert 8 * MiB - 4096 <= grown < 10 * MiB
    buffer[4 * MiB + 100:12 * MiB] = b"p" * (8 * MiB - 100)  # the pages are writeable
    assert buffer[12 * MiB - 1] == ord("p") and buffer[12 * MiB] == 0


class AdvisedBytes(bytearray):
    """A bytearray that records what madvise would have been asked."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.advised: list[tuple[int, ...]] = []

    def madvise(self, *args: int) -> None:
        self.advised.append(args)


def test_populate_skips_buffers_that_are_not_mmaps() -> None:
    # numpy.empty's and bytearrays come from memory that earlier messages freed.
    spy = AdvisedBytes(MiB)
    populate(memoryview(spy), 100, MiB)
    assert spy.advised == []
    populate(receive_buffer(MiB), 100, MiB)  # numpy.empty's: no madvise attribute to call


def test_arrays_arrive_aligned_after_odd_frames_and_split_pieces_stay_adjacent() -> None:
    encoder, msg = misaligning_message()
    with loopback() as (client, server):
        with in_thread(lambda: send_msg(client, msg, encoder)):
            received = recv_msg(server)
    check_aligned(received)
    # The complex array was split (into pieces of a multiple of 16 bytes): joined in place.
    assert owner_of(received["c16"]) is owner_of(received["f8"])


@dataclass
class LargeTransfer:
    msg: dict[str, Any]
    sent: int
    peak: int  # traced by tracemalloc during recv_msg (an mmap is not traced; numpy is)


@pytest.fixture(scope="module")
def large() -> Iterator[LargeTransfer]:
    """One message with arrays of 1 MiB and 200 MiB, split into 64 MiB pieces, sent once for
    the tests below. The sender's arrays are dropped before the tests look at the result."""
    msg = {"small": np.arange(SMALL_ITEMS, dtype=np.float64),
           "big": np.arange(BIG_ITEMS, dtype=np.float64), "tag": "two arrays"}
    encoder = Encoder(frame_split_size=64 * MiB)
    with loopback() as (client, server):
        tracemalloc.start()
        try:
            # a partial, not a closure over msg: the del below drops the arrays
            with in_thread(functools.partial(send_msg, client, msg, encoder)) as sent:
                received = recv_msg(server)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    del msg
    yield LargeTransfer(received, sent.result(), peak)


@pytest.mark.large
def test_large_arrays_arrive_equal(large: LargeTransfer) -> None:
    check_large_arrays(large.msg, large.sent)
    assert large.msg["small"].flags.writeable and large.msg["big"].flags.writeable


@pytest.mark.large
def test_large_arrays_are_views_of_the_one_receive_buffer(large: LargeTransfer) -> None:
    small, big = large.msg["small"], large.msg["big"]
    owner = owner_of(small)
    assert type(owner) is mmap.mmap
    assert owner_of(big) is owner  # the four 64 MiB pieces were joined without a copy
    whole = np.frombuffer(owner, dtype=np.uint8)
    assert np.shares_memory(small, whole) and np.shares_memory(big, whole)
    assert whole.nbytes < 201 * MiB + 4096  # the frames of one message, no more


@pytest.mark.large
def test_large_receive_copies_nothing_after_the_read(large: LargeTransfer) -> None:
    # The receive buffer is an mmap, which tracemalloc does not trace; a copy of the 200 MiB
    # payload (a bytearray join, a numpy copy) would be traced in full.
    assert large.peak < 50 * MiB


@pytest.mark.parametrize("cut, error", CUTS, ids=["count", "lengths", "header", "payload"])
def test_stream_ending_inside_a_message_is_a_frame_error(cut: int, error: str) -> None:
    with loopback() as (client, server):
        client.sendall(CUT_MESSAGE[:cut])
        client.close()
        with pytest.raises(FrameError, match="the stream ended " + error) as info:
            recv_msg(server)
        assert isinstance(info.value.__cause__, EOFError)


def test_stream_ending_between_messages_is_eof() -> None:
    with loopback() as (client, server):
        client.sendall(CUT_MESSAGE * 2)
        client.close()
        assert recv_msg(server) == recv_msg(server) == {"x": b"p" * 100_000}
        with pytest.raises(EOFError) as info:
            recv_msg(server)
        assert type(info.value) is EOFError


def reset(sock: socket.socket) -> None:
    """Close with an RST instead of a FIN (SO_LINGER on, timeout 0)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def test_connection_reset_inside_a_message_is_a_frame_error() -> None:
    with loopback() as (client, server):
        client.sendall(CUT_MESSAGE[:3])
        reset(client)
        with pytest.raises(FrameError, match="connection was reset inside the prelude") as info:
            recv_msg(server)
        assert isinstance(info.value.__cause__, ConnectionResetError)


def test_connection_reset_between_messages_is_the_sockets_error() -> None:
    with loopback() as (client, server):
        reset(client)
        with pytest.raises(ConnectionResetError):
            recv_msg(server)


def test_timeout_propagates() -> None:
    with loopback() as (client, server):
        server.settimeout(0.05)
        with pytest.raises(TimeoutError):
            recv_msg(server)


@pytest.mark.parametrize("prelude, error", HOSTILE,
                         ids=["count", "not fastser", "length", "total", "views"])
def test_hostile_preludes_are_refused_without_allocating(prelude: bytes, error: str) -> None:
    with loopback() as (client, server):
        client.sendall(prelude + b"\x00" * 64)

        def refuse() -> None:
            with pytest.raises(FrameError, match=error):
                recv_msg(server)
        assert peak_allocation(refuse) < MiB


# tracemalloc does not see an mmap (messages from MMAP_BYTES on): the address space's peak
# does, in a fresh process, where no earlier peak stands above the refusal's.
REFUSE_IN_CHILD = r"""
import json, re, socket, sys
from fastser import FrameError
from fastser.sock import recv_msg

def status(field):
    with open("/proc/self/status") as lines:
        for line in lines:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024

prelude, error = bytes.fromhex(sys.argv[1]), sys.argv[2]
client, server = socket.socketpair()
server.settimeout(10)
client.sendall(prelude + bytes(64))
size, peak = status("VmSize"), status("VmPeak")
try:
    recv_msg(server)
    raised = None
except FrameError as exc:
    raised = str(exc) if re.search(error, str(exc)) else "unexpected: " + str(exc)
print(json.dumps({"before": peak - size, "grew": status("VmPeak") - size, "raised": raised}))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc")
@pytest.mark.parametrize("prelude, error", HOSTILE,
                         ids=["count", "not fastser", "length", "total", "views"])
def test_hostile_preludes_map_no_memory(prelude: bytes, error: str) -> None:
    done = subprocess.run([sys.executable, "-c", REFUSE_IN_CHILD, prelude.hex(), error],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout)
    assert seen["raised"] is not None and not seen["raised"].startswith("unexpected"), seen
    assert seen["before"] < 64 * MiB, seen  # no earlier peak could hide the refusal's
    assert seen["grew"] < 64 * MiB, seen


def test_custom_limits_are_checked_before_the_lengths_are_read() -> None:
    decoder = Decoder(limits=Limits(max_frames=10, max_message_bytes=1000))
    with loopback() as (client, server):
        client.sendall(struct.pack("<Q", 11))  # no lengths follow: they must not be awaited
        with pytest.raises(FrameError, match="max_frames=10"):
            recv_msg(server, decoder)
    with loopback() as (client, server):
        client.sendall(struct.pack("<3Q", 2, 600, 600))
        with pytest.raises(FrameError, match="1200 bytes.*max_message_bytes=1000"):
            recv_msg(server, decoder)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc")
def test_valid_huge_prelude_commits_memory_only_as_bytes_arrive() -> None:
    prelude = struct.pack("<4Q", 3, 2**30, 2**30, 2**30)  # 3 GiB: within the default Limits
    with loopback() as (client, server):
        client.sendall(prelude + b"\x00" * 1000)
        client.close()

        def cut_short() -> None:
            with pytest.raises(FrameError, match="header frame .*: 1000 of the 3221225472"):
                recv_msg(server)
        traced: list[int] = []
        # The 3 GiB buffer was allocated (an mmap, which tracemalloc does not trace): at its
        # peak, resident memory grew by the bytes that arrived, not by the buffer.
        assert peak_rss_growth(lambda: traced.append(peak_allocation(cut_short))) < 64 * MiB
        assert traced[0] < MiB


def receive_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "the sender stopped early"
        data += chunk
    return bytes(data)


def scattered_buffers() -> list[memoryview]:
    return [memoryview(bytes([i % 256]) * (i * 37 % 5000 + 1)) for i in range(3000)]


TRICKLE_BYTES = 7777


class Trickle(socket.socket):
    """A socket whose sendmsg writes at most TRICKLE_BYTES a call: partial sends at odd
    offsets, inside a buffer or at its edge."""

    def sendmsg(self, buffers: Iterable[Any], *rest: Any) -> int:
        head = bytearray()
        for buf in buffers:
            head += memoryview(buf)[:TRICKLE_BYTES - len(head)]
            if len(head) == TRICKLE_BYTES:
                break
        return self.send(head)


@pytest.mark.skipif(not hasattr(socket.socket, "sendmsg"), reason="no sendmsg (Windows)")
@pytest.mark.parametrize("client_class", [socket.socket, Trickle])
@pytest.mark.parametrize("max_iov, max_bytes, count",
                         [(MAX_IOV, 2**30, 3000), (3, 1000, 3000), (1, 7, 50)])
def test_sendmsg_batches_and_partial_sends(client_class: type[socket.socket], max_iov: int,
                                           max_bytes: int, count: int) -> None:
    buffers = scattered_buffers()[:count]
    expected = b"".join(buffers)
    with loopback(client_class) as (client, server):
        with in_thread(lambda: sendmsg_all(client, list(buffers), max_iov, max_bytes)) as sent:
            assert receive_exactly(server, len(expected)) == expected
        assert sent.result() == len(expected)


def test_send_msg_resumes_after_partial_sends() -> None:
    msg = {"payload": bytes(range(256)) * 100, "more": [b"m" * 70_000, b"n" * 3]}
    with loopback(Trickle) as (client, server):
        with in_thread(lambda: send_msg(client, msg)) as sent:
            assert recv_msg(server) == msg
        assert sent.result() == len(pack_frames(dumps(msg)))


def test_sendall_fallback() -> None:
    buffers = scattered_buffers()[:500] + [memoryview(b"z" * 5000)]
    expected = b"".join(buffers)
    with loopback() as (client, server):
        with in_thread(lambda: sendall_each(client, buffers, 1000)) as sent:
            assert receive_exactly(server, len(expected)) == expected
        assert sent.result() == len(expected)


def test_small_frames_are_joined_and_large_ones_left_alone() -> None:
    large = bytearray(b"L" * COALESCE_BYTES)
    frames: list[Frame] = [b"header", b"", *[bytes([i]) * 3000 for i in range(50)], large,
                           memoryview(b"tail")]
    prelude = b"P" * 16
    buffers = coalesce(prelude, frames)
    assert b"".join(buffers) == prelude + b"".join(frames)
    assert [buf.obj is large for buf in buffers].count(True) == 1  # a view, not a copy
    assert all(buf.nbytes < 2 * COALESCE_BYTES for buf in buffers)
    assert len(buffers) < 6  # 52 small frames and the prelude in a few runs


def test_mutated_streams_give_only_fastser_errors_or_messages() -> None:
    import random

    from fastser import DeserializationError, SAFE_DESERIALIZERS

    rng = random.Random(7)
    safe = Decoder(deserializers=SAFE_DESERIALIZERS)
    good = stream_to_mutate()
    outcomes = {"messages": 0, "errors": 0}
    for _ in range(rounds(200, 5_000)):
        data = mutated(rng, good)
        with loopback() as (client, server):
            client.sendall(data)
            client.close()
            while True:
                try:
                    recv_msg(server, safe)
                    outcomes["messages"] += 1
                except EOFError:
                    break  # a clean end between messages
                except DeserializationError:  # FrameError included
                    outcomes["errors"] += 1
                    break  # the stream is unusable after an error
    assert outcomes["errors"] > 0 and outcomes["messages"] > 0

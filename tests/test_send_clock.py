"""SendClock: the rate a peer takes bytes at, timed on a real loopback socket."""

import socket
import sys
import threading
import time

import pytest

from fastser import LinkRate
from fastser.transport import send_clock
from fastser.transport.send_clock import SendClock, link_to, unsent_bytes

LINUX = sys.platform.startswith("linux")


def connected_pair(receive_buffer: int,
                   send_buffer: int = 1 << 16) -> tuple[socket.socket, socket.socket]:
    listener = socket.create_server(("127.0.0.1", 0))
    with listener:
        receiver = socket.socket()
        # Set before connecting: the window it advertises then bounds what it takes unread.
        receiver.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        receiver.connect(listener.getsockname())
        sender, _ = listener.accept()
    sender.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
    return sender, receiver


def read_slowly(receiver: socket.socket, taken: list[float]) -> None:
    """Read 8 MiB, 64 KiB every 10 ms (~6.5 MB/s); `taken` gets the bytes and seconds."""
    start = time.perf_counter()
    deadline = start + 30
    while taken[0] < 8 << 20 and time.perf_counter() < deadline:
        data = receiver.recv(1 << 16)
        if not data:
            break
        taken[0] += len(data)
        time.sleep(0.01)
    taken[1] = time.perf_counter() - start


@pytest.mark.skipif(not LINUX, reason="TIOCOUTQ is Linux's")
def test_unsent_bytes_counts_what_the_kernel_holds() -> None:
    sender, receiver = connected_pair(4096)
    with sender, receiver:
        assert unsent_bytes(sender.fileno()) == 0
        sender.setblocking(False)
        sent = 0
        try:
            for _ in range(1000):
                sent += sender.send(bytes(65536))
        except BlockingIOError:
            pass
        held = unsent_bytes(sender.fileno())
        assert 0 < held <= sent
    assert unsent_bytes(-1) == 0
    assert unsent_bytes(sender.fileno()) == 0  # closed: nothing to ask


def test_a_throttled_reader_is_measured_near_its_rate() -> None:
    # The reader takes 64 KiB every 10 ms: ~6.5 MB/s. The clock times one 8 MiB send, of
    # which the kernel's send buffer (2 MiB asked: Linux doubles it) still holds about half
    # when sendall returns: counting those bytes would double the rate.
    sender, receiver = connected_pair(1 << 16, 2 << 20)
    taken = [0.0, 0.0]
    link = LinkRate()
    clock = SendClock(link, sender)
    with sender, receiver:
        thread = threading.Thread(target=read_slowly, args=(receiver, taken))
        thread.start()
        clock.queued(8 << 20)
        sender.sendall(bytes(8 << 20))
        clock.flushed(True)
        thread.join(40)
    actual = taken[0] / taken[1]
    assert link.samples == 1
    # Off Linux every queued byte counts (the kernel's buffers as well): a looser bound.
    high = 1.5 if LINUX else 4.0
    assert 0.5 * actual < link.bytes_per_second < high * actual, (link, actual)


@pytest.mark.skipif(not LINUX, reason="the kernel's busy time (TCP_INFO) is Linux's")
def test_a_sender_that_comes_back_late_still_measures_the_reader() -> None:
    # A busy event loop sees its send flushed long after the kernel took the last byte: by
    # our own clock, the 8 MiB taken by a ~6.5 MB/s reader in ~1.3 s would read as taken
    # in 3 s and more. The kernel's record counts only the time it was busy sending.
    assert send_clock.sending_record(None) is None
    sender, receiver = connected_pair(1 << 16, 2 << 20)
    taken = [0.0, 0.0]
    link = LinkRate()
    clock = SendClock(link, sender)
    with sender, receiver:
        record = send_clock.sending_record(sender)
        assert record is not None and record[0] >= 0
        thread = threading.Thread(target=read_slowly, args=(receiver, taken))
        thread.start()
        clock.queued(8 << 20)
        sender.sendall(bytes(8 << 20))
        thread.join(40)
        time.sleep(1.0)  # the flush seen a second after the reader took the last byte
        clock.flushed(True)
    actual = taken[0] / taken[1]
    assert link.samples == 1
    assert 0.7 * actual < link.bytes_per_second < 1.5 * actual, (link, actual)
    assert send_clock.sending_record(sender) is None  # closed


def test_overlapping_sends_are_one_stretch_and_failures_count_nothing() -> None:
    link = LinkRate()
    clock = SendClock(link, None)
    clock.queued(1 << 20)
    clock.queued(1 << 20)
    time.sleep(0.002)
    clock.flushed(True)
    assert link.samples == 0  # one still pending
    clock.flushed(True)
    assert link.samples == 1
    assert link.bytes_per_second < (2 << 20) / 0.002
    clock.queued(1 << 20)
    clock.flushed(False)
    clock.flushed(True)  # more flushes than sends: ignored
    assert link.samples == 1
    clock.queued(1000)  # too few bytes to say anything of the link
    clock.flushed(True)
    assert link.samples == 1


def test_kernel_timed_stretches_are_summed_until_busy_long_enough() -> None:
    # The kernel counts busy time in ticks: 1 MiB stretches on a 1 Gbit link (8 ms each)
    # read 4, 8 or 12 ms, or none, at 250 Hz. Each alone could be off by half; summed until
    # busy 40 ms, the ticks a stretch missed or gained even out.
    link = LinkRate()
    clock = SendClock(link, None)
    mib = 1 << 20
    # Too few bytes to say anything of the link.
    clock.kernel_timed(send_clock.KERNEL_COUNTED_BYTES - 1, 4000)
    clock.kernel_timed(4 * mib, -1)  # a counter that went back
    # A link without a rate takes the first reading that has a busy time at all: until it
    # has one, frames are compressed blindly.
    clock.kernel_timed(mib, 0)
    assert link.samples == 0
    clock.kernel_timed(mib, 4000)
    assert link.samples == 1
    assert link.bytes_per_second == pytest.approx(2 * mib / 0.004)
    link = clock.link = LinkRate()
    link.sent(7 * mib, 1.0)  # a rate already: readings are summed
    readings = [8000, 4000, 0, 12000, 8000, 4000, 8000]  # 44 ms for 7 MiB
    for busy in readings[:-1]:
        clock.kernel_timed(mib, busy)
        assert link.samples == 1
    clock.kernel_timed(mib, readings[-1])
    assert link.samples == 2
    # Half way from 7 MiB/s to what the summed readings say (RATE_WEIGHT, 7 MiB sends).
    summed = 7 * mib / 0.044
    assert link.bytes_per_second == pytest.approx(7 * mib + 0.5 * 7 / 8 * (summed - 7 * mib))
    assert clock.acked == clock.busy_microseconds == 0  # from scratch again
    clock.kernel_timed(8 * mib, send_clock.SUMMED_BUSY_MICROSECONDS)
    assert link.samples == 3
    # Compressed messages make short stretches: they count, summed.
    for _ in range(10):
        clock.kernel_timed(send_clock.KERNEL_COUNTED_BYTES, 4000)
    assert link.samples == 4


def test_one_link_per_host_and_a_bounded_table(monkeypatch: pytest.MonkeyPatch) -> None:
    assert link_to("10.0.0.1") is link_to("10.0.0.1")
    assert link_to("10.0.0.1") is not link_to("10.0.0.2")
    saved = dict(send_clock._links)
    try:
        send_clock._links.clear()
        for number in range(send_clock.MAX_HOSTS + 10):
            link_to(f"host{number}")
        assert len(send_clock._links) == send_clock.MAX_HOSTS
        assert "host0" not in send_clock._links and "host10" in send_clock._links
    finally:
        send_clock._links.clear()
        send_clock._links.update(saved)

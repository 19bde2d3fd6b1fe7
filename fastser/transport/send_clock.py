"""How fast a peer takes what a connection sends it: SendClock times a connection's large
sends into a LinkRate (frames.adaptive), which Encoders on that link consult; link_to(host)
keeps one LinkRate per peer host. Sits on frames.adaptive.

A timed stretch runs from the moment a large send is queued while none is pending to the
moment the transport's own buffer has handed the last queued byte to the kernel. On Linux
the kernel times it: the bytes the peer acknowledged over the time the connection was busy
sending (TCP_INFO; summed over stretches until they were busy 40 ms, but the first at once,
as the kernel counts that time in ticks of a few milliseconds), which counts neither the
time this process took to hand the kernel more (a busy event loop comes back to a send late:
in the lab's CPU-bound shuffle, timing by our own clock read a 1 Gbit link at 2-60 MB/s) nor
the bytes the kernel's send buffer still holds. Elsewhere the stretch is timed by our clock,
and the bytes counted are those queued, less what the kernel's buffer held at the end more
than at the start where TIOCOUTQ says so (without it every queued byte counts, which
overstates the rate of a link slower than the sends by up to the kernel's buffer a stretch).

What a peer controls here is how fast it acknowledges. Reading slowly makes its link look
slow, so this process compresses more of what it sends that peer: at worst each frame once,
as "auto" would, in time and nothing more in memory (a clock holds two counters).
"""

import socket
import struct
import sys
import time
from typing import Final, Optional

from fastser.frames.adaptive import LinkRate

if sys.platform != "win32":
    import fcntl
    import termios

# Sends smaller than this are not timed: the kernel's buffer takes them whole, at once.
TIMED_BYTES: Final = 1 << 18
# A stretch in which fewer bytes left says little of the link (the kernel's and the path's
# queues took them at once); the LinkRate weighs larger ones more (frames.adaptive).
COUNTED_BYTES: Final = 1 << 20
# ... where the kernel times it: what it counts as acknowledged has left the queues, so a
# shorter stretch counts too (summed, SUMMED_BUSY_MICROSECONDS). It must: a link without a
# rate is compressed as "auto" does, and a shuffle's messages of 1-2 MiB, compressed, fall
# under COUNTED_BYTES, so the link would never get a rate (in the lab a worker sent a
# whole 1 Gbit shuffle compressed that way, each round).
KERNEL_COUNTED_BYTES: Final = TIMED_BYTES // 2
# Peer hosts remembered; the oldest is forgotten past this (a host's link is measured again
# within a few large sends).
MAX_HOSTS: Final = 4096
NO_BYTES: Final = bytes(4)
# Linux's struct tcp_info: tcpi_bytes_acked (u64) and tcpi_busy_time (u64, microseconds the
# connection had bytes queued or in flight; since Linux 4.10) sit at these offsets; a kernel
# that answers shorter has no busy time.
TCP_INFO: Final = getattr(socket, "TCP_INFO", -1)
BYTES_ACKED_AT: Final = 120
BUSY_TIME_AT: Final = 168
TCP_INFO_BYTES: Final = 176
# The kernel counts busy time in ticks of its clock (4 ms at 250 Hz, 10 ms at 100 Hz), so
# one stretch's reading can be off by a tick either way (a 1 MiB stretch on 1 Gbit lasts
# 8 ms). Stretches are summed until the sum was busy this long (microseconds).
SUMMED_BUSY_MICROSECONDS: Final = 40_000


def unsent_bytes(fileno: int) -> int:
    """Bytes a socket's kernel buffer holds that the peer has not acknowledged (Linux's
    TIOCOUTQ); 0 where that cannot be asked."""
    if sys.platform == "win32" or fileno < 0:
        return 0
    try:
        answer = fcntl.ioctl(fileno, termios.TIOCOUTQ, NO_BYTES)
    except OSError:  # closed, or not a socket
        return 0
    return int.from_bytes(answer, sys.byteorder, signed=True)


def sending_record(sock: Optional[socket.socket]) -> Optional[tuple[int, int]]:
    """(bytes the peer has acknowledged, microseconds the connection was busy sending),
    as the kernel counts them for `sock`; None where it does not (not Linux, an older
    kernel, not TCP, closed)."""
    if sock is None or TCP_INFO < 0:
        return None
    try:
        answer = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, TCP_INFO_BYTES)
    except (OSError, ValueError):
        return None
    if len(answer) < TCP_INFO_BYTES:
        return None
    acked: int = struct.unpack_from("=Q", answer, BYTES_ACKED_AT)[0]
    busy: int = struct.unpack_from("=Q", answer, BUSY_TIME_AT)[0]
    return acked, busy


def socket_fileno(sock: Optional[socket.socket]) -> int:
    try:
        return -1 if sock is None else sock.fileno()
    except (OSError, ValueError):
        return -1


class SendClock:
    """Times one connection's large sends on `sock` into `link`. The transport calls
    queued(n) as it queues a send of n bytes, and flushed(ok) when the transport has
    handed all of it to the kernel (ok: it was not lost to an error)."""

    def __init__(self, link: LinkRate, sock: Optional[socket.socket]) -> None:
        self.link = link
        self.sock = sock
        self.pending = 0
        self.start = 0.0
        self.queued_bytes = 0
        self.unsent_at_start = 0
        self.record_at_start: Optional[tuple[int, int]] = None
        self.failed = False
        # What the kernel counted over the stretches not yet told to the link.
        self.acked = 0
        self.busy_microseconds = 0

    def queued(self, nbytes: int) -> None:
        if self.pending == 0:
            self.start = time.perf_counter()
            self.queued_bytes = 0
            self.record_at_start = sending_record(self.sock)
            self.unsent_at_start = 0 if self.record_at_start is not None else \
                unsent_bytes(socket_fileno(self.sock))
            self.failed = False
        self.pending += 1
        self.queued_bytes += nbytes

    def flushed(self, ok: bool) -> None:
        if self.pending <= 0:
            return
        self.pending -= 1
        if not ok:
            self.failed = True
        if self.pending or self.failed:
            return
        seconds = time.perf_counter() - self.start
        first = self.record_at_start
        record = sending_record(self.sock) if first is not None else None
        if first is not None and record is not None:
            self.kernel_timed(record[0] - first[0], record[1] - first[1])
            return
        left = self.queued_bytes + self.unsent_at_start - unsent_bytes(socket_fileno(self.sock))
        if left >= COUNTED_BYTES and seconds > 0.0:
            self.link.sent(left, seconds)

    def kernel_timed(self, acked: int, busy_microseconds: int) -> None:
        """Count a stretch in which the peer acknowledged `acked` bytes over
        `busy_microseconds` busy, as the kernel counted them; tell the link once the
        stretches summed were busy SUMMED_BUSY_MICROSECONDS, or at once while it has no
        rate: until it has one, frames are compressed as "auto" does, which a fast link
        whose sends are few and short (a shuffle's, on veth: a few 2 MiB messages a
        round) pays for in CPU, so a rough first rate beats none."""
        if acked < KERNEL_COUNTED_BYTES or busy_microseconds < 0:
            return
        self.acked += acked
        self.busy_microseconds += busy_microseconds
        first = self.link.bytes_per_second == 0.0 and self.busy_microseconds > 0
        if first or self.busy_microseconds >= SUMMED_BUSY_MICROSECONDS:
            self.link.sent(self.acked, self.busy_microseconds / 1e6)
            self.acked = self.busy_microseconds = 0


# One LinkRate per peer host, oldest first.
_links: Final[dict[str, LinkRate]] = {}


def link_to(host: str) -> LinkRate:
    """The LinkRate every connection of this process to `host` shares."""
    link = _links.get(host)
    if link is None:
        if len(_links) >= MAX_HOSTS:
            del _links[next(iter(_links))]
        link = _links[host] = LinkRate()
    return link

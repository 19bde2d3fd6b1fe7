"""How fast a peer takes what a connection sends it: SendClock times a connection's large
sends into a LinkRate (frames.adaptive), which Encoders on that link consult; link_to(host)
keeps one LinkRate per peer host. Sits on frames.adaptive.

A timed stretch runs from the moment a large send is queued while none is pending to the
moment the transport's own buffer has handed the last queued byte to the kernel. The
kernel's send buffer (autotuned to several MiB) still holds some bytes then, and held some
at the start: on Linux, TIOCOUTQ says how many, and the bytes counted are those that left
for the peer. Elsewhere every queued byte counts, which overstates the rate of a link slower
than the sends by up to the kernel's buffer a stretch.
"""

import sys
import time
from typing import Final

from fastser.frames.adaptive import LinkRate

if sys.platform != "win32":
    import fcntl
    import termios

# Sends smaller than this are not timed: the kernel's buffer takes them whole, at once.
TIMED_BYTES: Final = 1 << 18
# A stretch in which fewer bytes left says little of the link (the kernel's and the path's
# queues took them at once); the LinkRate weighs larger ones more (frames.adaptive).
COUNTED_BYTES: Final = 1 << 20
# Peer hosts remembered; the oldest is forgotten past this (a host's link is measured again
# within a few large sends).
MAX_HOSTS: Final = 4096
NO_BYTES: Final = bytes(4)


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


class SendClock:
    """Times one connection's large sends into `link`. The transport calls queued(n) as it
    queues a send of n bytes, and flushed(ok) when the transport has handed all of it to
    the kernel (ok: it was not lost to an error)."""

    def __init__(self, link: LinkRate, fileno: int) -> None:
        self.link = link
        self.fileno = fileno
        self.pending = 0
        self.start = 0.0
        self.queued_bytes = 0
        self.unsent_at_start = 0
        self.failed = False

    def queued(self, nbytes: int) -> None:
        if self.pending == 0:
            self.start = time.perf_counter()
            self.queued_bytes = 0
            self.unsent_at_start = unsent_bytes(self.fileno)
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
        left = self.queued_bytes + self.unsent_at_start - unsent_bytes(self.fileno)
        if left >= COUNTED_BYTES and seconds > 0.0:
            self.link.sent(left, seconds)


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

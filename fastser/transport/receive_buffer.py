"""Where a received message's bytes go: one writeable buffer per message, chosen by its size,
and its pages faulted in just ahead of each read. Used by transport.sock, transport.aio and
fastser.dask.

Rule: nothing here commits memory for bytes that have not arrived: a prelude that passes the
Limits may announce gigabytes; frames.stream.FrameReader asks for a buffer, and for its pages
to be populated, no further ahead than its bounds allow.
"""

import mmap
import sys
from typing import Final

# READ_BYTES: the most a reader asks for a read, and so populates ahead of the bytes; kept
# here too for the readers that choose spans themselves (benchmarks/comm_receive.py).
from fastser.frames.stream import READ_BYTES as READ_BYTES, FrameReader, reader_for
from fastser.limits import Limits

# Messages of this size or more are received into an anonymous mmap, whose pages are
# committed only as data arrives, so a prelude that passes the Limits does not make us
# touch gigabytes before the bytes exist. Not lower: an mmap's pages are fresh, each a page
# fault and a zeroing, where malloc serves smaller buffers from memory that earlier
# messages freed (glibc's mmap threshold rises as large blocks are freed, up to 32 MiB on
# 64-bit): 8 MiB took 5.8x as long into a (shared) mmap.
MMAP_BYTES: Final = 32 * 2**20
# Without numpy, buffers under this size are bytearrays, whose memory is committed (zeroed)
# as they are made, before the bytes come: a prelude may announce this much for nothing.
BYTEARRAY_BYTES: Final = 2**16
# madvise(2)'s MADV_POPULATE_WRITE (Linux 5.14), which Python's mmap module does not name.
POPULATE_WRITE: Final = 23


def in_place_reader(limits: Limits) -> FrameReader:
    """A FrameReader for a transport that reads into its buffers in place: these buffers,
    populated ahead of each read (READ_BYTES, frames.stream's, at most)."""
    reader = reader_for(limits)
    reader.allocate = receive_buffer
    reader.populate = populate
    return reader


def receive_buffer(size: int) -> memoryview:
    """A writeable buffer of `size` bytes for one message's frames: from MMAP_BYTES on,
    private anonymous memory (anonymous_memory); below, with numpy loaded, an array from
    numpy.empty, as distributed's own reader allocates (never zeroed, unlike a bytearray:
    on a Dask cluster, 40 transfers of 8 MiB took 0.90x tcp://'s time into numpy.empty's
    buffers, 1.20x into bytearrays), else a bytearray under BYTEARRAY_BYTES and
    anonymous memory from there. numpy is used, never imported: fastser loads it only for
    arrays. None of them is written here (but a small bytearray), so memory is committed as
    the bytes arrive. The bytes outside the frames (alignment gaps) are never read."""
    if size >= MMAP_BYTES:
        return memoryview(anonymous_memory(size))
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        return memoryview(numpy.empty(size, numpy.uint8))
    if size >= BYTEARRAY_BYTES:
        return memoryview(anonymous_memory(size))
    return memoryview(bytearray(size))


def anonymous_memory(size: int) -> mmap.mmap:
    """`size` bytes of private anonymous memory, in 4 KiB pages. Not mmap's default for
    fileno -1, shared memory, whose pages fault in slower (100 MB in 51 ms, 35 ms here).
    Not transparent huge pages either (numpy.empty asks for them from 4 MiB on), though
    they fault in faster on a fresh machine (13 ms; populate brings these pages level, see
    there): on a cluster that has run a while they cost more. In one full run each of
    benchmarks/cluster.py, 40 transfers of 8 MB chunks worker to worker took 0.94x
    tcp://'s time with numpy.empty here, 2.65x with this mmap; a scatter of 100 arrays of
    1 MiB 0.72x and 1.00x."""
    if not hasattr(mmap, "MAP_PRIVATE"):  # Windows: no flags to choose
        return mmap.mmap(-1, size)
    return mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)  # fileno -1 adds MAP_ANONYMOUS


def populate(view: memoryview, start: int, stop: int) -> None:
    """Fault in bytes `start` to `stop` of `view`, a whole receive buffer, just before they
    are read into it: private anonymous memory (anonymous_memory) on Linux, in one madvise
    call instead of a page fault per 4 KiB page as the read writes. Bounded: callers ask
    for the span of one read, never for what a prelude announces. In
    benchmarks/comm_receive.py (15 rounds), tcp:// / fastser:// without and with: one array
    of 100 MB 0.78x and 1.10x, of 40 MB 0.75x and 1.07x, 5 of 8 MB 0.83x and 1.18x
    (numpy.empty's huge pages: 1.02x, 0.98x, 1.04x, but not on a cluster that has run a
    while)."""
    if sys.platform != "linux":
        return
    memory = view.obj
    if not isinstance(memory, mmap.mmap):  # small buffers come from memory freed before
        return
    first = start - start % mmap.PAGESIZE  # madvise takes a page-aligned start
    try:
        memory.madvise(POPULATE_WRITE, first, stop - first)
    except OSError:  # EINVAL before Linux 5.14: the read faults the pages in itself
        pass

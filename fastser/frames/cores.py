"""How many of this machine's cores compressing could have to itself: the cores this process
may run on that were idle over the last moments (Linux's /proc/stat), plus the share of a
core this process spent compressing then (CPU time: a core it would have had back).
frames.adaptive charges compressing by how far that falls short of one core. Sits on
nothing of fastser.

Where every core is busy with other work, a thread that compresses takes its time from that
work (a shuffle's own tasks, the host's other processes), and what compressing saves on a
link that is not the limit buys little. Where the kernel keeps no such record (not Linux),
the cores read as free: compressing is priced as on an idle machine. A CPU quota (a
container's cgroup cpu.max) is not read: its cores count as idle when the host's are.
"""

import os
import sys
import threading
from typing import Final, Optional

STAT_FILE: Final = "/proc/stat"
# Read at most this often (seconds): a read costs tens of microseconds, a sampled frame is
# 10 kB and up, and the kernel counts in ticks of 10 ms, so a shorter window says little.
READ_EVERY: Final = 0.25
# Past this (seconds) since the previous read, the ticks since say nothing of now (a pause
# reads as idle cores): the last share read stands until the next read. A run of frames
# after a pause (a shuffle's next round) is priced as the cores were when the last one
# ended, not as idle: those were busy if it was.
FORGOTTEN_AFTER: Final = 10.0
# The cpu lines come first: a machine of 2,000 cores has them in this much (a longer file is
# cut at its last whole line).
MAX_BYTES: Final = 1 << 18
ALL_FREE: Final = float("inf")


def allowed_cpus() -> Optional[frozenset[int]]:
    """The CPUs this process may run on (its affinity), or None where that cannot be
    asked."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return frozenset(os.sched_getaffinity(0))
    except OSError:
        return None


def read_idle(path: str, cpus: Optional[frozenset[int]] = None) -> Optional[tuple[int, int, int]]:
    """(ticks idle, ticks in all, cores) from a /proc/stat file: summed over the cores
    numbered in `cpus`, or over all of them where `cpus` is None; None where it cannot be
    read or does not say."""
    try:
        with open(path, "rb") as file:
            text = file.read(MAX_BYTES)
    except OSError:
        return None
    if len(text) == MAX_BYTES:
        text = text[:text.rfind(b"\n") + 1]
    idle = total = cores = 0
    summary: Optional[tuple[int, int]] = None
    for line in text.decode("ascii", "replace").splitlines():
        if not line.startswith("cpu"):
            if summary is not None or cores:
                break  # past the cpu lines (the long intr line comes next)
            continue
        fields = line.split()
        if len(fields) < 6:
            continue
        number = fields[0][3:]
        if number and not number.isdigit():
            continue
        try:
            # user nice system idle iowait irq softirq steal (guest and guest_nice are
            # counted in user and nice already); a core waiting on a disk is free to
            # compress.
            ticks = [int(field) for field in fields[1:9]]
        except ValueError:
            return None
        if not number:
            summary = ticks[3] + ticks[4], sum(ticks)
        elif cpus is None or int(number) in cpus:
            idle += ticks[3] + ticks[4]
            total += sum(ticks)
            cores += 1
    if cores == 0:
        return None
    if cpus is None:
        return None if summary is None else (summary[0], summary[1], cores)
    return idle, total, cores


class FreeCores:
    """The cores compressing could have had over the last moments, as of the latest read
    of `path` (of the cores numbered in `cpus`, all where None); ALL_FREE until two reads
    could be compared, and while nothing can be read. Compressing threads and the event
    loop ask it at once: one reads, the others take what was read before."""

    def __init__(self, path: str = STAT_FILE, cpus: Optional[frozenset[int]] = None) -> None:
        self.path = path
        self.cpus = cpus
        self.read_at = -FORGOTTEN_AFTER  # when it was last read (time.monotonic)
        self.idle = -1  # its ticks then; < 0 before a read succeeded
        self.total = 0
        self.spent = 0.0  # CPU seconds this process has spent compressing, in all
        self.spent_then = 0.0  # ... at the last read
        self.free = ALL_FREE
        self.reading = threading.Lock()

    def compressed(self, seconds: float) -> None:
        """Count `seconds` of CPU time this process spent compressing."""
        if seconds > 0.0:
            with self.reading:
                self.spent += seconds

    def free_at(self, now: float) -> float:
        """The cores idle since the previous read, plus the share of one this process spent
        compressing since then; read again when that was READ_EVERY or more before
        `now`."""
        if now - self.read_at < READ_EVERY or not self.reading.acquire(blocking=False):
            return self.free
        try:
            return self.read(now)
        finally:
            self.reading.release()

    def read(self, now: float) -> float:
        elapsed = now - self.read_at
        reading = read_idle(self.path, self.cpus)
        if reading is None:
            self.free = ALL_FREE
        elif self.idle < 0 or elapsed > FORGOTTEN_AFTER:
            pass  # nothing to compare with, or too long ago: as was
        else:
            idle, total, cores = reading
            ticks = total - self.total
            if ticks <= 0:  # no tick since (or a counter went back): as was, read again
                return self.free
            own = (self.spent - self.spent_then) / elapsed
            self.free = cores * min(1.0, max(0.0, (idle - self.idle) / ticks)) + own
        if reading is None:
            self.idle = -1
        else:
            self.idle, self.total = reading[0], reading[1]
        self.read_at, self.spent_then = now, self.spent
        return self.free

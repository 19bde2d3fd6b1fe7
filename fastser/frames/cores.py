"""How many of this machine's cores compressing could have to itself: the cores that were
idle over the last moments (Linux's /proc/stat), plus the share of a core this process spent
compressing then (a core it would have had back). frames.adaptive charges compressing by
how far that falls short of one core. Sits on nothing of fastser.

Where every core is busy with other work, a thread that compresses takes its time from that
work (a shuffle's own tasks, the host's other processes), and what compressing saves on a
link that is not the limit buys little. Where the kernel keeps no such record (not Linux),
the cores read as free: compressing is priced as on an idle machine.
"""

from typing import Final, Optional

STAT_FILE: Final = "/proc/stat"
# Read at most this often (seconds): a read costs tens of microseconds, a sampled frame is
# 10 kB and up, and the kernel counts in ticks of 10 ms, so a shorter window says little.
READ_EVERY: Final = 0.25
# Past this (seconds) since the previous read, the cores are read as free until the next
# read: what they did then says nothing of now.
FORGOTTEN_AFTER: Final = 10.0
MAX_BYTES: Final = 1 << 16  # the first line, the summed "cpu" one, is all that is read
ALL_FREE: Final = float("inf")


def read_idle(path: str) -> Optional[tuple[int, int, int]]:
    """(ticks idle, ticks in all, cores) summed over the machine's cores, from a
    /proc/stat file; None where it cannot be read or does not say."""
    try:
        with open(path, "rb") as file:
            text = file.read(MAX_BYTES)
    except OSError:
        return None
    lines = text.decode("ascii", "replace").splitlines()
    cores = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    if not lines or cores == 0:
        return None
    fields = lines[0].split()
    if fields[0] != "cpu" or len(fields) < 6:
        return None
    try:
        ticks = [int(field) for field in fields[1:]]
    except ValueError:
        return None
    # user nice system idle iowait ...: a core waiting on a disk is free to compress.
    return ticks[3] + ticks[4], sum(ticks), cores


class FreeCores:
    """The cores compressing could have had over the last moments, as of the latest read
    of `path`; ALL_FREE while nothing can be read."""

    def __init__(self, path: str = STAT_FILE) -> None:
        self.path = path
        self.read_at = -FORGOTTEN_AFTER  # when it was last read (time.monotonic)
        self.idle = -1  # its ticks then; < 0 before a read succeeded
        self.total = 0
        self.spent = 0.0  # seconds this process has spent compressing, in all
        self.spent_then = 0.0  # ... at the last read
        self.free = ALL_FREE

    def compressed(self, seconds: float) -> None:
        """Count `seconds` this process spent compressing."""
        if seconds > 0.0:
            self.spent += seconds

    def free_at(self, now: float) -> float:
        """The cores idle since the previous read, plus the share of one this process spent
        compressing since then; read again when that was READ_EVERY or more before
        `now`."""
        elapsed = now - self.read_at
        if elapsed < READ_EVERY:
            return self.free
        reading = read_idle(self.path)
        if reading is None or self.idle < 0 or elapsed > FORGOTTEN_AFTER:
            self.free = ALL_FREE
        else:
            idle, total, cores = reading
            ticks = total - self.total
            if ticks > 0:
                own = (self.spent - self.spent_then) / elapsed
                self.free = cores * (idle - self.idle) / ticks + own
        if reading is None:
            self.idle = -1
        else:
            self.idle, self.total = reading[0], reading[1]
        self.read_at, self.spent_then = now, self.spent
        return self.free

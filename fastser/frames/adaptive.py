"""Compression chosen for the link at hand: whether compressing a frame makes it arrive
sooner, and with which compressor, from the rate the peer takes bytes at (a LinkRate that a
transport feeds as it sends) and what compressing and inflating cost on this machine
(timed on the sample that frames.compression takes of each frame anyway, and scaled by
what whole frames took as they were compressed lately). Sits on arguments and
frames.cores.

Model: a message is compressed whole, sent, then inflated whole (nothing overlaps). A frame
of S bytes sent as it is takes S / L at a link rate of L bytes a second; compressed to
r * S it takes S * (c + d + r / L), where c and d are the seconds a byte costs to compress
and to inflate, charged more where the machine's cores are busy with other work
(core_charge). The cheapest compressor is used when that is under 1 / L by MARGIN. Where
even a frame that vanished (r = 0) could not pay, no sample is taken: a link faster than
the compressor (loopback, an unshaped veth pair, often 10 Gbit) pays no tax for the choice.
"""

import math
import time
from typing import Final, Optional

from fastser.arguments import check_int
from fastser.frames.cores import FreeCores, allowed_cpus

# What a choice must gain: compressed, a frame must take under 1 / MARGIN of its plain time.
# It keeps a frame whose gain is within the timing noise of a sample from being compressed.
MARGIN: Final = 1.1
# The weight of a send in a LinkRate, by its size: a send of FULL_WEIGHT_BYTES or more moves
# the estimate RATE_WEIGHT of the way to its own rate, a smaller one in proportion. A short
# send measures the burst that queues along the path take at the sender's line rate (on the
# lab's 1 Gbit link, with a tbf bucket of 500 kB, sends of a few MiB read up to 2x its
# rate), not the rate a large frame crosses at, which is what compression is decided for.
RATE_WEIGHT: Final = 0.5
FULL_WEIGHT_BYTES: Final = 8 << 20
# The weight of a sample's cost in a compressor's running cost: a cheaper sample counts for
# much, a dearer one for little. A sample takes tens of microseconds, so one preemption or
# wait makes it several times dearer, and only ever dearer; a whole frame, compressed in
# milliseconds, pays the average contention, not that luck. The running cost follows the
# cheap end of the samples (in the lab's workers the even average read 7-14 ns a byte for
# lz4 and zstd, whose whole frames took 3-5 and made a 1 Gbit transfer 1.7x faster).
COST_DOWN: Final = 0.5
COST_UP: Final = 0.05
# Seconds per byte to compress and to inflate, before this process has timed any: what lz4
# and zstd (level 3) took on arrays of small int64 values on a 2-core x86_64 machine of
# 2026 (lz4 1.22 + 0.44 ns, zstd 2.12 + 0.83 ns, zlib 23.3 + 1.5 ns). Only a start: every
# sample taken replaces part of it.
START_COSTS: Final = {"lz4": 1.7e-9, "zstd": 3.0e-9, "zlib": 25e-9}
# Of START_COSTS, what compressing alone takes (the rest is inflating).
START_COMPRESS_COSTS: Final = {"lz4": 1.2e-9, "zstd": 2.1e-9, "zlib": 23e-9}
# A sample that shrank less than this says little of what compressing costs (lz4 skips
# incompressible input ten times faster than it compresses): it is not counted.
COUNTED_RATIO: Final = 0.9
OUTLIER: Final = 4.0
# Whole frames against the samples. A warm sample, followed at its cheap end, prices a
# compressor on an idle core; a whole frame, timed by the wall clock as it is compressed
# for real, pays what a sample cannot see: the cores' other work on a busy machine (the
# compressing thread waits for one) and memory beyond the caches. Each compressor's cost is
# its samples' times the scale its whole frames showed (what they took against its sample
# price), so that a machine busy with other work compresses less. A frame weighs by its
# size, as sends do in LinkRate; the scale stays within MIN_SCALE..MAX_SCALE.
SCALE_WEIGHT: Final = 0.5
MIN_SCALE: Final = 0.5
MAX_SCALE: Final = 16.0
# What whole frames showed ages: the cores' other work comes and goes, and a compressor
# that is not chosen times no frame, so its scale would keep what one busy moment said. In
# the lab, the first frames (compressed while six clusters started at once) took 7-18 ns a
# byte with zstd and 15 with lz4, against 2-6 for their samples; the scales they left
# (5-6.5) kept a 1 Gbit link from being compressed for the rest of the run. Every
# SCALE_HALF_LIFE seconds without a frame timed halves a scale's distance from 1 (the
# samples' price), so a compressor is tried again within a few half-lives, and on a machine
# that is still busy its next frame puts the scale back up.
SCALE_HALF_LIFE: Final = 10.0
# Compressing on busy cores. Where the machine's other work leaves compressing less than a
# core (frames.cores: the idle cores, and the share of one this process spent compressing),
# a thread that compresses takes its time from that work, and the link it spares is seldom
# what the run waits for: compressing (not the peer's inflating) is charged 1 / (the cores
# left), at most MAX_CORE_CHARGE times, so that a slow link, where compressing pays at any
# charge, is still compressed (docs/design.md has the lab's figures).
MAX_CORE_CHARGE: Final = 16.0


class LinkRate:
    """The rate, in bytes a second, at which a peer takes what is sent to it, as its
    transport measured its sends; 0.0 until one was measured. Shared by every connection to
    one host, as they share the link. An Encoder made with it compresses a frame only where
    that makes the frame arrive sooner (see Encoder's `link`)."""

    def __init__(self) -> None:
        self.bytes_per_second = 0.0
        self.samples = 0

    def sent(self, nbytes: int, seconds: float) -> None:
        """Count `nbytes` taken by the peer in `seconds` of busy sending (the time the
        transport held bytes it could not yet hand over, not the time it waited for work).
        The larger the send, the more it counts (FULL_WEIGHT_BYTES)."""
        check_int(nbytes, "nbytes")
        if nbytes <= 0 or not seconds > 0.0:  # also refuses NaN
            return
        rate = nbytes / float(seconds)
        if self.samples == 0:
            self.bytes_per_second = rate
        else:
            weight = RATE_WEIGHT * min(1.0, nbytes / FULL_WEIGHT_BYTES)
            self.bytes_per_second += weight * (rate - self.bytes_per_second)
        self.samples += 1

    def __repr__(self) -> str:
        if not self.samples:
            return "LinkRate(unmeasured)"
        return f"LinkRate({self.bytes_per_second / 1e6:.1f} MB/s, {self.samples} sends)"


# Each compressor's running cost by its samples (c + d, and c alone), in seconds per byte,
# and the scale its whole frames put on it, in this process.
costs: Final = dict(START_COSTS)
compress_costs: Final = dict(START_COMPRESS_COSTS)
frame_scales: Final = {name: 1.0 for name in START_COSTS}
# When each scale was last moved by a frame (time.monotonic).
scaled_at: Final = {name: 0.0 for name in START_COSTS}
# The cores compressing could have to itself: those this process may run on (its affinity
# as it was imported).
cores: Final = FreeCores(cpus=allowed_cpus())


def followed(cost: float, sample: float) -> float:
    """A running cost moved towards a sample's, at most OUTLIER times it (COST_DOWN,
    COST_UP)."""
    weight = COST_DOWN if sample < cost else COST_UP
    return cost + weight * (min(sample, OUTLIER * cost) - cost)


def counted_cost(name: str, ratio: float, compressing: float, inflating: float) -> None:
    """Let a sample's cost, in seconds per byte to compress and to inflate it, count in
    `name`'s running costs."""
    if ratio <= COUNTED_RATIO and compressing > 0.0 and inflating >= 0.0:
        costs[name] = followed(costs[name], compressing + inflating)
        compress_costs[name] = followed(compress_costs[name], compressing)


def scale_of(name: str, now: Optional[float] = None) -> float:
    """The scale of `name`'s cost that its whole frames showed, at `now` (time.monotonic
    by default): nearer 1 the longer ago they were timed (SCALE_HALF_LIFE)."""
    scale = frame_scales[name]
    age = (time.monotonic() if now is None else now) - scaled_at[name]
    if scale == 1.0 or age <= 0.0:
        return scale
    return 1.0 + (scale - 1.0) * math.pow(0.5, age / SCALE_HALF_LIFE)


def counted_frame(name: str, nbytes: int, ratio: float, seconds: float, cpu_seconds: float,
                  now: Optional[float] = None) -> None:
    """Let a whole frame of `nbytes`, compressed to `ratio` in `seconds` (wall clock),
    count in the scale of `name`'s cost (SCALE_WEIGHT), at `now` (time.monotonic by
    default), and the `cpu_seconds` its thread spent on it in what this process spent
    compressing (core_charge)."""
    cores.compressed(cpu_seconds)
    if ratio > COUNTED_RATIO or nbytes <= 0 or not seconds > 0.0:
        return
    if now is None:
        now = time.monotonic()
    seen = seconds / nbytes / compress_costs[name]
    seen = min(MAX_SCALE, max(MIN_SCALE, seen))
    weight = SCALE_WEIGHT * min(1.0, nbytes / FULL_WEIGHT_BYTES)
    scale = scale_of(name, now)
    frame_scales[name] = scale + weight * (seen - scale)
    scaled_at[name] = now


def core_charge(now: float) -> float:
    """What a second of compressing costs at `now`, in seconds, on this machine's cores as
    busy as they were lately (MAX_CORE_CHARGE)."""
    free = cores.free_at(now)
    return 1.0 / min(1.0, max(free, 1.0 / MAX_CORE_CHARGE))


def cost_of(name: str, now: Optional[float] = None) -> float:
    """What compressing and inflating a byte with `name` costs (c + d), as samples and
    whole frames measured it, compressing charged for the cores as busy as they are
    (core_charge; the peer inflates on its own), at `now` (time.monotonic by default)."""
    if now is None:
        now = time.monotonic()
    compressing = compress_costs[name]
    return scale_of(name, now) * (compressing * core_charge(now) + costs[name] - compressing)


def worth_sampling(names: tuple[str, ...], link: LinkRate) -> bool:
    """Whether any of `names` could make a frame arrive sooner on `link`: not where the link
    takes bytes faster than the cheapest compresses and inflates them."""
    rate = link.bytes_per_second
    if rate == 0.0:
        return True
    now = time.monotonic()
    cheapest = min(cost_of(name, now) for name in names)
    return cheapest * MARGIN * rate < 1.0


def seconds_per_byte(ratio: float, cost: float, link: LinkRate) -> float:
    """What one byte of a frame costs in time compressed to `ratio` at `cost` (c + d)."""
    return cost + ratio / link.bytes_per_second


def pays(ratio: float, cost: float, link: LinkRate) -> bool:
    """Whether a frame that compresses to `ratio` at `cost` (c + d, seconds per byte)
    arrives sooner compressed on `link`, whose rate must be known."""
    return seconds_per_byte(ratio, cost, link) * MARGIN < 1.0 / link.bytes_per_second

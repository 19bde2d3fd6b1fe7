"""Compression chosen for the link: LinkRate, the cost model, and Encoder(link=...)."""

import pathlib
import sys
import time
from collections.abc import Iterator
from typing import Any, Optional

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fastser
from fastser import Encoder, LinkRate, Serialize
from fastser.frames import adaptive
from fastser.frames.compression import available_compressions
from fastser.frames.cores import (ALL_FREE, FORGOTTEN_AFTER, READ_EVERY, STAT_FILE, FreeCores,
                                  allowed_cpus, read_idle)

# int64 of small values: lz4 keeps about a third, zstd under a tenth (frames.adaptive).
SMALL_INTS = np.random.default_rng(3).integers(0, 16, 500_000, dtype=np.int64)
RANDOM = np.random.default_rng(4).random(500_000)
AT = 1000.0  # a time.monotonic() reading, for tests that fix the clock
BOTH = all(name in available_compressions() for name in ("lz4", "zstd"))


@pytest.fixture(autouse=True)
def fixed_costs() -> Iterator[None]:
    """Each test starts from the starting costs, and leaves them so."""
    starts = ((adaptive.costs, adaptive.START_COSTS),
              (adaptive.compress_costs, adaptive.START_COMPRESS_COSTS),
              (adaptive.frame_scales, dict.fromkeys(adaptive.START_COSTS, 1.0)),
              (adaptive.scaled_at, dict.fromkeys(adaptive.START_COSTS, 0.0)))
    saved = [dict(running) for running, _ in starts]
    for running, start in starts:
        running.update(start)
    # The machine's own cores read as free (a test that wants them busy gives a file).
    saved_path, saved_cpus = adaptive.cores.path, adaptive.cores.cpus
    use_stat_file(MISSING)
    try:
        yield
    finally:
        for (running, _), kept in zip(starts, saved):
            running.update(kept)
        use_stat_file(saved_path, saved_cpus)


MISSING = "/nonexistent/fastser-test/stat"


def use_stat_file(path: str, cpus: Optional[frozenset[int]] = None) -> None:
    """Let adaptive.cores read `path` (the cores numbered in `cpus`, all where None), from
    scratch."""
    cores = adaptive.cores
    cores.path, cores.cpus = path, cpus
    cores.read_at, cores.idle, cores.free = -FORGOTTEN_AFTER, -1, ALL_FREE


def stat_text(idle: int, busy: int, cores: int = 2) -> str:
    """A /proc/stat of `cores` cores that have been `idle` and `busy` ticks in all."""
    return (f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\n"
            + "".join(f"cpu{n} 0 0 0 0 0 0 0 0 0 0\n" for n in range(cores))
            + "intr 1 2 3\n")


def link_of(bytes_per_second: float) -> LinkRate:
    link = LinkRate()
    if bytes_per_second:
        link.sent(int(bytes_per_second), 1.0)
    return link


def compressions(frames: list[Any]) -> list[Any]:
    """What the header says each out-of-band frame went through (None: nothing)."""
    header = fastser.loads(frames, deserialize=False)
    payload = header["x"]
    return list(payload.header.get("compression") or [None] * len(payload.frames))


def test_link_rate_averages_what_was_sent() -> None:
    link = LinkRate()
    assert link.bytes_per_second == 0.0 and link.samples == 0
    assert "unmeasured" in repr(link)
    link.sent(1_000_000, 0.01)
    assert link.bytes_per_second == pytest.approx(1e8)
    full = adaptive.FULL_WEIGHT_BYTES
    link.sent(full, full / 1e7)  # a large send, slower: half way towards it
    assert link.bytes_per_second == pytest.approx(1e8 + adaptive.RATE_WEIGHT * (1e7 - 1e8))
    for _ in range(10):  # a link that stays slow brings it down
        link.sent(full, full / 1e7)
    assert link.bytes_per_second < 1.01e7
    before = link.bytes_per_second
    link.sent(full // 8, full / 8 / 1e9)  # a short burst at 1 GB/s moves it a sixteenth
    assert link.bytes_per_second == pytest.approx(
        before + adaptive.RATE_WEIGHT / 8 * (1e9 - before))
    before = link.bytes_per_second
    link.sent(0, 1.0)
    link.sent(1000, 0.0)
    link.sent(1000, float("nan"))
    assert link.bytes_per_second == before and link.samples == 13
    assert "MB/s" in repr(link)


def test_link_rate_checks_its_argument() -> None:
    # Compiled, mypyc's check of the signature words it ("int object expected; got str").
    with pytest.raises(TypeError, match="nbytes|int object expected; got str"):
        LinkRate().sent("1000", 1.0)  # type: ignore[arg-type]


def test_the_model_compresses_on_slow_links_only() -> None:
    cost = adaptive.costs["lz4"]  # ~1.7 ns a byte
    assert adaptive.pays(0.35, cost, link_of(117e6))  # 1 Gbit: 5 ns a byte against 8.5
    assert not adaptive.pays(0.35, cost, link_of(2e9))  # CPU-bound: 2.3 against 0.5
    assert not adaptive.pays(0.99, cost, link_of(117e6))  # saves too little
    assert adaptive.worth_sampling(("lz4",), link_of(117e6))
    assert not adaptive.worth_sampling(("lz4",), link_of(2e9))
    assert adaptive.worth_sampling(("lz4",), LinkRate())  # unknown: try


def test_a_sample_counts_in_the_running_cost_within_bounds() -> None:
    start = adaptive.costs["lz4"]
    adaptive.counted_cost("lz4", 0.99, 1.0, 0.0)  # incompressible: says little, not counted
    assert adaptive.costs["lz4"] == start
    adaptive.counted_cost("lz4", 0.3, 0.5, 0.5)  # a sample interrupted: at most 4x, and little
    assert adaptive.costs["lz4"] == pytest.approx(
        start + adaptive.COST_UP * (adaptive.OUTLIER * start - start))
    for _ in range(20):  # dear samples, again and again: the cost climbs
        adaptive.counted_cost("lz4", 0.3, 5 * start, 5 * start)
    assert adaptive.costs["lz4"] > 2 * start
    dear = adaptive.costs["lz4"]
    adaptive.counted_cost("lz4", 0.3, start / 2, start / 2)  # one undisturbed sample: half way
    assert adaptive.costs["lz4"] == pytest.approx(dear + adaptive.COST_DOWN * (start - dear))
    assert adaptive.cost_of("lz4") == adaptive.costs["lz4"]  # no whole frame timed yet


def test_whole_frames_scale_the_cost_by_what_they_took() -> None:
    link = link_of(117e6)  # 1 Gbit: a byte on the wire costs 8.5 ns
    assert adaptive.pays(0.35, adaptive.cost_of("lz4", AT), link)
    sample = adaptive.compress_costs["lz4"]
    full = adaptive.FULL_WEIGHT_BYTES
    # All at one instant (AT): how the scale ages is test_what_whole_frames_showed_ages.
    # A busy machine: whole frames took 5x their sample price (the compressing thread
    # waited for a core); two of them and lz4 no longer pays on this link.
    for _ in range(2):
        adaptive.counted_frame("lz4", full, 0.35, full * 5 * sample, 0.0, now=AT)
    assert adaptive.frame_scales["lz4"] == pytest.approx(4.0)
    assert adaptive.cost_of("lz4", AT) == pytest.approx(4.0 * adaptive.costs["lz4"])
    assert not adaptive.pays(0.35, adaptive.cost_of("lz4", AT), link)
    assert adaptive.scale_of("zstd", AT) == 1.0  # each compressor its own
    # A small frame counts in proportion; incompressible or untimed ones not at all.
    adaptive.counted_frame("lz4", full // 4, 0.35, full // 4 * sample, 0.0, now=AT)
    assert adaptive.frame_scales["lz4"] == pytest.approx(4.0 + 0.125 * (1.0 - 4.0))
    scale = adaptive.frame_scales["lz4"]
    adaptive.counted_frame("lz4", full, 0.95, full * sample, 0.0, now=AT)
    adaptive.counted_frame("lz4", full, 0.35, 0.0, 0.0, now=AT)
    adaptive.counted_frame("lz4", 0, 0.35, 1.0, 0.0, now=AT)
    assert adaptive.frame_scales["lz4"] == scale
    # One preempted frame moves it at most to MAX_SCALE, half way.
    adaptive.counted_frame("lz4", full, 0.35, 1e6, 0.0, now=AT)
    assert adaptive.frame_scales["lz4"] == pytest.approx(
        scale + adaptive.SCALE_WEIGHT * (adaptive.MAX_SCALE - scale))
    # The idle machine again: the scale comes back.
    for _ in range(20):
        adaptive.counted_frame("lz4", full, 0.35, full * sample, 0.0, now=AT)
    assert adaptive.frame_scales["lz4"] == pytest.approx(1.0, rel=1e-3)


@pytest.mark.skipif("lz4" not in available_compressions(), reason="needs lz4")
def test_an_unmeasured_link_compresses_as_auto_does() -> None:
    frames = Encoder(compression="adaptive").dumps({"x": Serialize(SMALL_INTS)})
    assert compressions(frames) == ["lz4"]
    assert Encoder(compression="adaptive").compressor is not None


@pytest.mark.skipif(not available_compressions(), reason="needs a compressor")
def test_a_fast_link_pays_no_compression_and_takes_no_sample() -> None:
    before = dict(adaptive.costs)
    encoder = Encoder(compression="adaptive", link=link_of(5e9))
    frames = encoder.dumps({"x": Serialize(SMALL_INTS)})
    assert compressions(frames) == [None]
    assert adaptive.costs == before  # no sample was timed
    assert np.array_equal(fastser.loads(frames)["x"], SMALL_INTS)


@pytest.mark.skipif(not BOTH, reason="needs lz4 and zstandard")
def test_a_slow_link_takes_the_compressor_that_delivers_soonest() -> None:
    # 10 MB/s: bytes on the wire cost 100 ns each; zstd's smaller output wins.
    frames = Encoder(compression="adaptive", link=link_of(1e7)).dumps(
        {"x": Serialize(SMALL_INTS)})
    assert compressions(frames) == ["zstd"]
    assert np.array_equal(fastser.loads(frames)["x"], SMALL_INTS)
    # Incompressible data goes as it is, on any link.
    frames = Encoder(compression="adaptive", link=link_of(1e7)).dumps(
        {"x": Serialize(RANDOM)})
    assert compressions(frames) == [None]


@pytest.mark.skipif(not available_compressions(), reason="needs a compressor")
def test_a_busy_machine_compresses_less() -> None:
    encoder = Encoder(compression="adaptive", link=link_of(117e6))
    (chosen,) = compressions(encoder.dumps({"x": Serialize(SMALL_INTS)}))
    assert chosen is not None
    assert adaptive.frame_scales[chosen] != 1.0  # the whole frame was timed
    # Whole frames that took MAX_SCALE times their samples: nothing pays on 1 Gbit.
    adaptive.frame_scales.update(dict.fromkeys(adaptive.frame_scales, adaptive.MAX_SCALE))
    adaptive.scaled_at.update(dict.fromkeys(adaptive.scaled_at, time.monotonic()))
    frames = encoder.dumps({"x": Serialize(SMALL_INTS)})
    assert compressions(frames) == [None]
    assert np.array_equal(fastser.loads(frames)["x"], SMALL_INTS)
    # The busy moment passed long ago, and no frame was timed since (none was compressed):
    # compressing is tried again.
    adaptive.scaled_at.update(dict.fromkeys(adaptive.scaled_at,
                                            time.monotonic() - 10 * adaptive.SCALE_HALF_LIFE))
    (chosen,) = compressions(encoder.dumps({"x": Serialize(SMALL_INTS)}))
    assert chosen is not None


def test_free_cores_are_the_idle_ones_and_what_compressing_took(
        tmp_path: pathlib.Path) -> None:
    stat = tmp_path / "stat"
    assert read_idle(str(stat)) is None  # missing
    stat.write_text(stat_text(idle=100, busy=50, cores=4))
    assert read_idle(str(stat)) == (100, 150, 4)
    for junk in ("", "intr 1 2\n", "cpu  1 2 x 4 5\ncpu0 1 2 3 4 5\n", "cpu  1 2\ncpu0 1\n",
                 "cpu  1 2 3 4 5 6\n", "\ncpu0 1\n", "\x00\xff" * 100):
        stat.write_text(junk, encoding="latin-1")
        assert read_idle(str(stat)) is None, junk
        assert read_idle(str(stat), frozenset({0})) is None, junk
    # Per core, of those this process may run on; guest time is in user time already;
    # idle and iowait are free.
    stat.write_text("cpu  60 0 0 40 0 0 0 0 9 9\n"
                    "cpu0 10 0 0 10 0 0 0 0 9 9\n"
                    "cpu1 20 0 0 10 5 0 0 0 0 0\n"
                    "cpufreq 1 2 3 4 5 6\n"
                    "cpu3 30 0 0 15 0 0 0 5 0 0\n")
    assert read_idle(str(stat)) == (40, 100, 3)
    assert read_idle(str(stat), frozenset({1, 3})) == (30, 85, 2)
    assert read_idle(str(stat), frozenset({2})) is None  # none of its cores listed
    # A file longer than is read is cut at its last whole line.
    many = "".join(f"cpu{n} 1 0 0 1 0 0 0 0 0 0\n" for n in range(40_000))
    stat.write_text("cpu  0 0 0 0 0 0 0 0 0 0\n" + many)
    idle, total, counted = read_idle(str(stat), frozenset(range(40_000))) or (0, 0, 0)
    assert 0 < counted < 40_000 and (idle, total) == (counted, 2 * counted)
    free = FreeCores(str(stat))
    stat.write_text(stat_text(idle=0, busy=0))
    assert free.free_at(AT) == ALL_FREE  # nothing to compare the first read with
    # Half a second later: 20 of 100 ticks idle on 2 cores (0.4 of a core), and this
    # process compressed for 0.1 s of it (0.2 of a core).
    stat.write_text(stat_text(idle=20, busy=80))
    free.compressed(0.1)
    free.compressed(-1.0)  # counts nothing
    assert free.free_at(AT + 0.5) == pytest.approx(0.4 + 0.2)
    stat.write_text(stat_text(idle=120, busy=80))
    assert free.free_at(AT + 0.5 + READ_EVERY / 2) == pytest.approx(0.6)  # not read again
    assert free.free_at(AT + 1.0) == pytest.approx(2.0)  # all idle since
    stat.write_text(stat_text(idle=220, busy=280))
    # Too long ago to say (the pause reads as idle): what was read last stands.
    assert free.free_at(AT + 1.0 + FORGOTTEN_AFTER + 1) == pytest.approx(2.0)
    stat.write_text(stat_text(idle=220, busy=380))
    assert free.free_at(AT + 1.5 + FORGOTTEN_AFTER + 1) == 0.0  # busy since
    stat.write_text(stat_text(idle=320, busy=480))
    assert free.free_at(AT + 3.0 + 2 * FORGOTTEN_AFTER) == 0.0  # a pause: busy as last read
    later = AT + 3 * FORGOTTEN_AFTER
    stat.unlink()
    assert free.free_at(later) == ALL_FREE  # gone: unknown
    stat.write_text(stat_text(idle=120, busy=380))
    assert free.free_at(later + 0.5) == ALL_FREE  # from scratch
    stat.write_text(stat_text(idle=120, busy=380))
    assert free.free_at(later + 1.0) == ALL_FREE  # no tick since: as was
    stat.write_text(stat_text(idle=120, busy=480))
    assert free.free_at(later + 1.5) == 0.0
    # While one thread reads, the others take what was read before.
    stat.write_text(stat_text(idle=220, busy=480))
    with free.reading:
        assert free.free_at(later + 2.0) == 0.0
    assert free.free_at(later + 2.0) == 2.0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/stat is Linux's")
def test_this_machines_cores_are_read() -> None:
    cpus = allowed_cpus()
    if cpus is None or read_idle(STAT_FILE, cpus) is None:
        pytest.skip("this system's /proc/stat or affinity cannot be read")
    assert adaptive.cores.cpus is None or adaptive.cores.cpus == cpus
    free = FreeCores(cpus=cpus)
    assert free.free_at(time.monotonic()) == ALL_FREE
    time.sleep(READ_EVERY * 1.5)
    assert 0.0 <= free.free_at(time.monotonic()) <= len(cpus)


def test_busy_cores_charge_compressing(tmp_path: pathlib.Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text(stat_text(idle=0, busy=0))
    use_stat_file(str(stat))
    assert adaptive.core_charge(AT) == 1.0  # first read: free
    stat.write_text(stat_text(idle=25, busy=75))  # half a core idle
    assert adaptive.core_charge(AT + 1.0) == pytest.approx(2.0)
    # Compressing is charged; inflating, on the peer, is not.
    compressing = adaptive.compress_costs["lz4"]
    assert adaptive.cost_of("lz4", AT + 1.0) == pytest.approx(
        adaptive.costs["lz4"] + compressing)
    stat.write_text(stat_text(idle=25, busy=175))  # no core idle
    assert adaptive.core_charge(AT + 2.0) == adaptive.MAX_CORE_CHARGE
    stat.write_text(stat_text(idle=225, busy=175))  # both idle: no charge beyond one core
    assert adaptive.core_charge(AT + 3.0) == 1.0


@pytest.mark.skipif(not available_compressions(), reason="needs a compressor")
def test_busy_cores_compress_where_the_link_is_the_limit_only(tmp_path: pathlib.Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text(stat_text(idle=0, busy=0))
    use_stat_file(str(stat))
    gigabit, slow = Encoder(compression="adaptive", link=link_of(117e6)), \
        Encoder(compression="adaptive", link=link_of(1e6))
    spent = adaptive.cores.spent
    assert compressions(gigabit.dumps({"x": Serialize(SMALL_INTS)})) != [None]  # free
    assert adaptive.cores.spent > spent  # the CPU time compressing took counts
    # Both cores busy with other work since (and none of it compressing).
    adaptive.cores.read_at = time.monotonic()
    adaptive.cores.spent_then = adaptive.cores.spent
    stat.write_text(stat_text(idle=0, busy=100))
    time.sleep(READ_EVERY * 1.5)
    frames = gigabit.dumps({"x": Serialize(SMALL_INTS)})
    assert compressions(frames) == [None]
    assert np.array_equal(fastser.loads(frames)["x"], SMALL_INTS)
    # A link a hundred times slower is the limit however busy the cores are.
    assert compressions(slow.dumps({"x": Serialize(SMALL_INTS)})) != [None]


def test_what_whole_frames_showed_ages() -> None:
    sample = adaptive.compress_costs["zstd"]
    full = adaptive.FULL_WEIGHT_BYTES
    adaptive.counted_frame("zstd", full, 0.1, full * 9 * sample, 0.0, now=100.0)
    assert adaptive.scale_of("zstd", 100.0) == pytest.approx(5.0)
    half = adaptive.SCALE_HALF_LIFE
    assert adaptive.scale_of("zstd", 100.0 + half) == pytest.approx(3.0)
    assert adaptive.scale_of("zstd", 100.0 + 2 * half) == pytest.approx(2.0)
    assert adaptive.cost_of("zstd", 100.0 + 2 * half) == pytest.approx(
        2.0 * adaptive.costs["zstd"])
    # A frame timed later moves the scale from where it had come to: an idle frame after
    # one half-life, half way from 3 to 1.
    adaptive.counted_frame("zstd", full, 0.1, full * sample, 0.0, now=100.0 + half)
    assert adaptive.scale_of("zstd", 100.0 + half) == pytest.approx(2.0)
    # A scale under 1 (frames cheaper than their samples) comes back up to 1 alike.
    adaptive.counted_frame("lz4", full, 0.3, full * adaptive.compress_costs["lz4"] / 4, 0.0,
                           now=50.0)
    low = adaptive.scale_of("lz4", 50.0)
    assert low == pytest.approx(0.75)  # seen at MIN_SCALE, half way
    assert adaptive.scale_of("lz4", 50.0 + half) == pytest.approx(1.0 - (1.0 - low) / 2)
    # A clock that went back does not make a scale grow.
    assert adaptive.scale_of("zstd", 0.0) == adaptive.frame_scales["zstd"]


@pytest.mark.skipif("lz4" not in available_compressions(), reason="needs lz4")
def test_a_named_compression_with_a_link_adapts_with_that_one() -> None:
    link = link_of(1e7)
    frames = Encoder(compression="lz4", link=link).dumps({"x": Serialize(SMALL_INTS)})
    assert compressions(frames) == ["lz4"]
    link.sent(10**12, 1.0)  # now far faster than lz4: no longer compressed
    assert link.bytes_per_second > 1e10
    frames = Encoder(compression="lz4", link=link).dumps({"x": Serialize(SMALL_INTS)})
    assert compressions(frames) == [None]


def test_a_link_needs_a_compression() -> None:
    with pytest.raises(ValueError, match="link= takes effect only with a compression"):
        Encoder(link=LinkRate())
    with pytest.raises(TypeError, match=r"^Encoder\(\) argument 'link' must be LinkRate or None, "
                       "not int$"):
        Encoder(compression="zlib", link=3)  # type: ignore[arg-type]


@pytest.mark.skipif(not available_compressions(), reason="needs a compressor")
@settings(max_examples=30, deadline=None)
@given(rate=st.sampled_from([0.0, 1e6, 1e8, 1e9, 1e11]),
       repeat=st.integers(1, 4), size=st.integers(0, 70_000))
def test_whatever_is_chosen_comes_back_equal(rate: float, repeat: int, size: int) -> None:
    data = (bytes(range(repeat)) * (size // repeat + 1))[:size]
    msg = {"x": Serialize(data), "raw": bytearray(data), "list": [data]}
    frames = Encoder(compression="adaptive", link=link_of(rate)).dumps(msg)
    assert fastser.loads(frames) == {"x": data, "raw": bytearray(data), "list": [data]}

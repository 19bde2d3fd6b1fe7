"""What a hostile peer's bytes buy, each bound tested with the worst input known: memory in a
subprocess (tracemalloc, as a multiple of the wire bytes), time as a ratio to a benign
message of the same size and key types (never an absolute time)."""

import collections
import functools
import math
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastser
from fastser import DeserializationError
from fastser.errors import SenderError
from strategies import examples, rounds

MERSENNE = (1 << 61) - 1  # CPython hashes ints and floats modulo this prime


def colliding_floats(count: int) -> list[float]:
    """`count` distinct floats, in groups of up to ~200 that share one hash: a float m*2**e
    hashes to m*2**(e mod 61) mod 2**61-1, a rotation of m's bits, so an h whose set bits
    stand 9 apart is hit by ~33 exponents for each of its set bits."""
    out: list[float] = []
    shift = 0
    while len(out) < count:
        h = sum(1 << ((bit + shift) % 61) for bit in (0, 9, 18, 27, 36, 45))
        shift += 1
        for b in range(61):
            m0 = ((h >> b) | (h << (61 - b))) & MERSENNE
            if not (m0 & 1 and m0 < 1 << 53):
                continue
            for e in range(-1074 + (b - -1074) % 61, 972, 61):
                x = math.ldexp(m0, e)
                if x and not math.isinf(x) and hash(x) == h:
                    out.append(x)
    return out[:count]


def median_time(run: Callable[[], Any]) -> float:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        try:
            run()
        except DeserializationError:
            pass
        times.append(time.perf_counter() - start)
    return statistics.median(times)


KEYS = rounds(20_000, 200_000)  # the extended suite: ten times the keys


@functools.lru_cache(maxsize=1)
def hostile_and_benign() -> list[tuple[str, Any, Any, dict[str, Any]]]:
    floats = colliding_floats(KEYS)
    plain = [float(i) + 0.5 for i in range(KEYS)]
    # Past 64 bits (ext 1), in groups of 40 of one hash: k * MERSENNE + group hashes to
    # group (groups, not one: building one group of KEYS here would take seconds).
    big = [k * MERSENNE + group for group in range(KEYS // 40) for k in range(9, 49)]
    plain_big = [2**70 + k for k in range(len(big))]
    return [
        ("float keys", dict.fromkeys(floats), dict.fromkeys(plain), {}),
        ("big int keys", dict.fromkeys(big), dict.fromkeys(plain_big), {}),
        ("tuple keys", dict.fromkeys((x,) for x in floats),
         dict.fromkeys((x,) for x in plain), {}),
        ("frozenset keys", dict.fromkeys(frozenset((x,)) for x in big),
         dict.fromkeys(frozenset((x,)) for x in plain_big), {}),
        ("set items", set(big), set(plain_big), {}),
        ("array keys under lists_as_tuples", dict.fromkeys((x,) for x in floats),
         dict.fromkeys((x,) for x in plain), {"lists_as_tuples": True}),
    ]


def raw_header(msg: Any, lists: bool) -> list[Any]:
    if not lists:
        return fastser.dumps(msg)
    # Keys as plain msgpack arrays (what distributed writes), read back as tuples.
    return [b"\x01" + msgpack.packb(msg, use_bin_type=True)]


@pytest.mark.parametrize("case", range(6))
def test_keys_of_one_hash_are_refused_in_linear_time(case: int) -> None:
    name, hostile, benign, options = hostile_and_benign()[case]
    lists = bool(options)
    decoder = fastser.Decoder(**options)
    bad, good = raw_header(hostile, lists), raw_header(benign, lists)
    assert 0.5 < len(bad[0]) / len(good[0]) < 2, name
    assert decoder.loads(good) is not None
    with pytest.raises(DeserializationError, match="distinct values of one hash"):
        decoder.loads(bad)
    ratio = median_time(lambda: decoder.loads(bad)) / median_time(lambda: decoder.loads(good))
    assert ratio < 3, (name, ratio)


def test_a_few_equal_hashes_and_many_equal_keys_still_load() -> None:
    # Fewer than the bound, and any number of equal values (one key, as a dict sees it).
    few = dict.fromkeys(k * MERSENNE for k in range(9, 15))
    same = [(1.5, "x")] * 10_000 + [2**70] * 10_000
    for msg in (few, same, {1: 1, 1.0: 2, True: 3}):  # noqa: F601 - one key, deliberately
        assert fastser.loads(fastser.dumps(msg)) == msg


def peak_multiple(code: str) -> float:
    """Run `code` (which sets `frames`) then loads them with a safe decoder in a fresh
    interpreter; the decode's peak traced memory over the wire bytes."""
    script = "import sys, tracemalloc, msgpack, fastser\n" + code + textwrap.dedent("""
        wire = sum(len(f) for f in frames)
        tracemalloc.start()
        try:
            decoder.loads(frames)
        except fastser.DeserializationError as exc:
            print("refused:", exc, file=sys.stderr)
        print(tracemalloc.get_traced_memory()[1] / wire)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, check=True)
    return float(done.stdout.split()[-1])


SAFE = "decoder = fastser.Decoder(deserializers=fastser.SAFE_DESERIALIZERS)\n"
N = rounds(1 << 18, 1 << 22)  # header bytes; the extended suite: 4 MiB


@pytest.mark.parametrize("name, code", [
    ("empty maps", SAFE + f"frames = [b'\\x01\\xdd' + ({N}).to_bytes(4, 'big') + b'\\x80' * {N}]"),
    ("one-item arrays as tuples",
     "decoder = fastser.Decoder(lists_as_tuples=True)\n"
     f"frames = [b'\\x01\\xdd' + ({N // 2}).to_bytes(4, 'big') + b'\\x91\\xc0' * {N // 2}]"),
    ("arrays nested 250 deep as tuples, each chain ending in its own int (no two equal)",
     "decoder = fastser.Decoder(lists_as_tuples=True)\n"
     f"chains = [b'\\x91' * 250 + b'\\xd2' + i.to_bytes(4, 'big') for i in range({N // 255})]\n"
     f"frames = [b'\\x01\\xdd' + ({N // 255}).to_bytes(4, 'big') + b''.join(chains)]"),
    ("maps keyed by an empty memoryview, nested 200 deep",  # ext 3 of no data per level
     "decoder = fastser.Decoder(deserializers=fastser.SAFE_DESERIALIZERS)\n"
     "level = b'\\x81\\xc7\\x00\\x03'\n"
     f"chain = level * 200 + b'\\xc0'\n"
     f"frames = [b'\\x01\\xdd' + ({N} // len(chain)).to_bytes(4, 'big')"
     f" + chain * ({N} // len(chain))]"),
    ("one-byte pickles kept unopened",
     SAFE + "one = msgpack.packb([msgpack.ExtType(13, b''), {'serializer': 'pickle'}, [b'N.']])\n"
     f"frames = [b'\\x01\\xdd' + ({N} // len(one)).to_bytes(4, 'big') + one * ({N} // len(one))]"),
])
def test_a_header_buys_at_most_150_times_its_bytes(name: str, code: str) -> None:
    assert peak_multiple(code) < 150, name


COMPRESSED_MSGPACK = SAFE + """
import zlib
size = 2**25 - 5
payload = b"\\xdd" + size.to_bytes(4, "big") + b"\\x80" * size  # 32 MiB of empty maps
header = {{"serializer": "msgpack", "compression": ["{name}"]}}
comp = {compress}
frames = [b"\\x01" + msgpack.packb([msgpack.ExtType(12, b""), header, [comp]])]
"""


@pytest.mark.parametrize("name, compress", [
    ("zlib", "zlib.compress(payload, 9)"),
    ("zstd", "__import__('zstandard').ZstdCompressor(level=3).compress(payload)"),
    ("lz4", "__import__('lz4.block').block.compress(payload, store_size=True)"),
])
def test_a_compressed_msgpack_payload_buys_no_more_than_header_bytes(name: str,
                                                                     compress: str) -> None:
    # Each inflated byte of a msgpack payload becomes up to ~100 bytes of objects: such a
    # frame may inflate to 3/2 of its size, so a few KB cannot buy gigabytes.
    pytest.importorskip({"zlib": "zlib", "zstd": "zstandard", "lz4": "lz4"}[name])
    code = COMPRESSED_MSGPACK.format(name=name, compress=compress)
    multiple = peak_multiple(code)
    assert multiple < 150 + (64 << 20) / 1000, multiple  # 150x the wire + 64 MiB


def test_a_compressed_msgpack_frame_has_no_allowance_past_three_halves() -> None:
    # Not even a small one: a fixed allowance per frame or message buys a fixed amount of
    # objects for a few wire bytes (100 KiB of empty maps: ~8 MiB of dicts from ~150 bytes).
    import zlib
    for size in (1024, 100 * 1024):
        inner = b"\xdd" + size.to_bytes(4, "big") + b"\x80" * size
        record = [msgpack.ExtType(12, b""), {"serializer": "msgpack", "compression": ["zlib"]},
                  [zlib.compress(inner, 9)]]
        with pytest.raises(DeserializationError, match="3/2 of its size"):
            fastser.loads([b"\x01" + msgpack.packb(record)], deserializers=["msgpack"])
    # Within 3/2 it loads: random ints compress a little.
    import random
    ints = [random.randrange(2**40) for _ in range(20_000)]
    packed = msgpack.packb(ints)
    squeezed = zlib.compress(packed, 9)
    assert len(packed) <= len(squeezed) * 3 // 2
    record = [msgpack.ExtType(12, b""), {"serializer": "msgpack", "compression": ["zlib"]},
              [squeezed]]
    assert fastser.loads([b"\x01" + msgpack.packb(record)], deserializers=["msgpack"]) == ints


def test_a_compressed_msgpack_payload_is_refused_and_what_fastser_writes_loads() -> None:
    payload: list[dict[str, int]] = [{} for _ in range(2_000_000)]
    frames = fastser.dumps(fastser.Serialize(payload), serializers=["msgpack"],
                           compression="zlib")
    # fastser left it uncompressed: compressed, it would inflate past what loads allows.
    assert fastser.loads(frames, deserializers=["msgpack"]) == payload
    header = {"serializer": "msgpack", "compression": ["zlib"]}
    import zlib
    record = [msgpack.ExtType(12, b""), header, [zlib.compress(msgpack.packb(payload))]]
    with pytest.raises(DeserializationError, match="may inflate to"):
        fastser.loads([b"\x01" + msgpack.packb(record)], deserializers=["msgpack"])


def test_msgpack_payloads_share_the_header_budget() -> None:
    payload = list(range(300_000))
    frames = fastser.dumps(fastser.Serialize(payload), serializers=["msgpack"])
    assert fastser.loads(frames, deserializers=["msgpack"]) == payload
    with pytest.raises(DeserializationError, match="Limits.max_header_bytes=100000"):
        fastser.loads(frames, deserializers=["msgpack"],
                      limits=fastser.Limits(max_header_bytes=100_000))
    kept = fastser.loads(frames, deserialize=False, limits=fastser.Limits(max_header_bytes=100_000))
    assert isinstance(kept, fastser.Serialized)  # unopened: msgpack makes nothing of it


def test_lists_as_tuples_keeps_a_payload_header_as_the_sender_wrote_it() -> None:
    header = {"serializer": "dispatch", "type": "bytes", "empty": (), "none": [],
              "nested": [(), [()], ([],)]}
    kept = fastser.Serialized(header, [b"abc"])
    for lists in (False, True):
        out = fastser.Decoder(deserialize=False, lists_as_tuples=lists).loads(
            fastser.dumps({"k": kept, "t": [(), []]}))
        assert out["k"].header == header
        assert repr(out["k"].header) == repr(header)  # tuples stay tuples, lists lists
        assert out["t"] == (((), ()) if lists else [(), []])


# Structure-aware fuzzing of colliding keys: messages whose keys and set items come from
# pools of one hash each, nested in dicts, sets, frozensets and tuples. Whatever the mix,
# loads gives the message back or refuses it for equal hashes, and refuses it whenever one
# dict or set holds more keys of one hash than the counter lets through (32; float keys are
# looked for where 40 or more may stand).

FLOAT_POOL = colliding_floats(60)
INT_POOL = [k * MERSENNE + 7 for k in range(9, 69)]  # ext 1 big ints, all hash 7
POOLS = [FLOAT_POOL, INT_POOL, [(x,) for x in FLOAT_POOL], [(x, "k") for x in INT_POOL],
         [frozenset((x,)) for x in INT_POOL]]


@st.composite
def colliding_messages(draw: Any) -> Any:
    pool = draw(st.sampled_from(POOLS))
    count = draw(st.integers(1, len(pool)))
    keys = pool[:count] + draw(st.lists(st.sampled_from(pool), max_size=10))
    plain = draw(st.lists(st.integers(0, 1000) | st.text(max_size=3), max_size=10))
    shape = draw(st.sampled_from(["dict", "set", "nested", "frozenset", "list"]))
    if shape == "dict":
        return dict.fromkeys(keys + plain, 1)
    if shape == "set":
        return set(keys + plain)
    if shape == "frozenset":
        return {"fs": frozenset(keys), "p": plain}
    if shape == "list":
        return [keys, plain]  # as values: counted, never inserted among each other
    return {"a": [dict.fromkeys(keys[: len(keys) // 2]), {"b": set(keys[len(keys) // 2:])}]}


def largest_group(msg: Any) -> int:
    """The most distinct keys (or set items) of one hash in any one dict or set of `msg`."""
    most = 0
    stack = [msg]
    while stack:
        item = stack.pop()
        if isinstance(item, (dict, set, frozenset)):
            counts = collections.Counter(hash(key) for key in item)
            most = max(most, max(counts.values(), default=0))
            stack.extend(item.values() if isinstance(item, dict) else ())
            stack.extend(item)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return most


@settings(max_examples=examples(150), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(colliding_messages(), st.booleans())
def test_colliding_keys_load_back_or_are_refused(msg: Any, lists: bool) -> None:
    frames = fastser.dumps(msg)
    decoder = fastser.Decoder(lists_as_tuples=lists)
    try:
        out = decoder.loads(frames)
    except DeserializationError as exc:
        assert "distinct values of one hash" in str(exc)
        return
    # 32 through the counter; fewer than 40 float keys are not looked for at all.
    assert largest_group(msg) < 40
    if not lists:
        assert out == msg


def test_record_keys_of_one_hash_are_refused() -> None:
    # A Pickled or Serialized hashes by its family and frames: records in dict keys that
    # differ only in their headers all collide, and are counted as keys.
    for code in (7, 8):
        keys = {msgpack.ExtType(code, msgpack.packb([{"serializer": "pickle", "n": i}, []])): 1
                for i in range(2000)}
        frames = [b"\x01" + msgpack.packb(keys)]
        # A safe decoder keeps a pickled record as Pickled; a forwarding one keeps both.
        safe = [fastser.Decoder(deserializers=fastser.SAFE_DESERIALIZERS)] if code == 8 else []
        for decoder in safe + [fastser.Decoder(deserialize=False)]:
            with pytest.raises(DeserializationError, match="distinct values of one hash"):
                decoder.loads(frames)


def test_float_keys_in_msgpack_payloads_and_record_keys_are_counted() -> None:
    floats = colliding_floats(400)
    inner = msgpack.packb(dict.fromkeys(floats))
    payload = fastser.Serialized({"serializer": "msgpack"}, [inner])
    with pytest.raises(DeserializationError, match="distinct values of one hash"):
        fastser.loads(fastser.dumps(payload), deserializers=["msgpack"])
    key = msgpack.ExtType(7, msgpack.packb([{"serializer": "msgpack",
                                             "f": dict.fromkeys(floats)}, [inner[:1]]]))
    with pytest.raises(DeserializationError, match="distinct values of one hash"):
        fastser.loads([b"\x01" + msgpack.packb({key: 1})], deserialize=False)
    # A few floats, or many as values, load.
    few = fastser.Serialized({"serializer": "msgpack"},
                             [msgpack.packb(dict.fromkeys(floats[:20]))])
    assert len(fastser.loads(fastser.dumps(few), deserializers=["msgpack"])) == 20
    values = fastser.Serialized({"serializer": "msgpack"}, [msgpack.packb(floats)])
    assert fastser.loads(fastser.dumps(values), deserializers=["msgpack"]) == floats


def test_an_error_payload_buys_a_bounded_text() -> None:
    import zlib
    text = "x" * (8 << 20) + "\U0001f600"
    frame = zlib.compress(text.encode())
    record = [msgpack.ExtType(12, b""), {"serializer": "error", "compression": ["zlib"]},
              [frame]]
    with pytest.raises(SenderError) as caught:
        fastser.loads([b"\x01" + msgpack.packb(record)],
                      deserializers=fastser.SAFE_DESERIALIZERS)
    message = str(caught.value)
    assert len(message) < 70_000 and f"[... {(8 << 20) + 4 - 65536} more bytes]" in message


def test_a_tuple_nested_deep_around_a_wide_one_is_hashed_once_a_level() -> None:
    # CPython 3.11 keeps no tuple's hash: counting each level's hash by hash() would hash
    # the 200,000 ints at the bottom again at each of the 250 levels above them.
    width = rounds(200_000, 1_000_000)
    body = b"\xdd" + (width + 1).to_bytes(4, "big") + b"\xe0" + b"\x01" * width
    deep = b"\x01" + b"\x92\xe0" * 250 + body
    flat = b"\x01" + b"\xdd" + (width + 251).to_bytes(4, "big") + b"\xe0" + b"\x01" * (width + 250)
    for decoder in (fastser.Decoder(), fastser.Decoder(lists_as_tuples=True),
                    fastser.Decoder(deserialize=False)):
        assert decoder.loads([deep]) is not None
        ratio = (median_time(functools.partial(decoder.loads, [deep]))
                 / median_time(functools.partial(decoder.loads, [flat])))
        assert ratio < 3, ratio


@settings(max_examples=examples(200), deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                    | st.text(max_size=4) | st.binary(max_size=4),
                    lambda inner: st.lists(inner, max_size=4).map(tuple)
                    | st.frozensets(inner.filter(lambda x: not isinstance(x, tuple)),
                                    max_size=3),
                    max_leaves=20))
def test_the_counter_hashes_a_tuple_as_cpython_does(value: Any) -> None:
    from fastser.codec.collisions import TUPLE_HASH_FROM_ITEMS, tuple_hash
    assert TUPLE_HASH_FROM_ITEMS  # 64-bit CPython 3.11, as CI runs
    if isinstance(value, tuple):
        assert tuple_hash([hash(item) for item in value]) == hash(value)

"""Sampled compression of payload frames, and bounded decompression. Sits on arguments,
frame_types, errors, headers and frames.adaptive (which compressor pays on a link); lz4
and zstandard are optional and imported on first use.

Rule: a decompressor never produces more than the caller's bound, and costs memory and
time linear in the bytes it reads and writes. The size a frame announces (lz4's size prefix,
zstd's content size) is checked against the bound first and is trusted only as far as the
compressed bytes could hold it: lz4's format caps it at 255 bytes per byte; a zstd buffer
starts at most 8 bytes per compressed byte plus 1 MiB and grows as output arrives. zlib,
which announces nothing, is fed in bounded slices and inflated in bounded steps.
"""

import importlib
import sys
import threading
import time
import warnings
import zlib
from collections.abc import Callable
from types import FrameType
from typing import Any, Final, Optional

from fastser.arguments import check_str
from fastser.errors import DeserializationError, chained, shown
from fastser.frame_types import Frame, Header, byte_view
from fastser.frames.adaptive import (LinkRate, cost_of, counted_cost, counted_frame, pays,
                                     seconds_per_byte, worth_sampling)
from fastser.headers import HEADER_COMPRESSION

COMPRESSIONS: Final = ("lz4", "zstd", "zlib")
AUTO_ORDER: Final = ("lz4", "zstd")  # zlib is too slow to be chosen for the caller
# The names that choose for the caller: "auto" one compressor, "adaptive" per frame among
# the AUTO_ORDER ones installed, for the link (frames.adaptive).
CHOOSING: Final = ("auto", "adaptive")
EXTRA_PACKAGE: Final = {"lz4": "lz4", "zstd": "zstandard"}
MIN_COMPRESS_BYTES: Final = 10_000  # smaller payloads are left as they are
SAMPLE_PIECES: Final = 5
SAMPLE_PIECE_BYTES: Final = 2_000
KEEP_RATIO: Final = 0.7  # keep a compressed frame only when it saves at least 30 %
# lz4's block format takes at most LZ4_MAX_INPUT_SIZE bytes; bigger frames travel as they are.
MAX_COMPRESS_BYTES: Final = 0x7E000000
LZ4_SIZE_PREFIX: Final = 4
# A block's bytes are literals (one out each) or a sequence's token, offset and length bytes:
# 3 + n bytes copy at most 4 + 15 + 255 * n, so no block writes more than 255 per byte.
LZ4_MAX_RATIO: Final = 255
# A zstd frame's first buffer: what genuine frames that compress well fit in at once (zero
# copy), and all that a lying stated size can make us allocate before the data disproves it.
ZSTD_FIRST_RATIO: Final = 8
ZSTD_FIRST_SLACK: Final = 1 << 20
ZSTD_STEP: Final = 1 << 18  # beyond the first buffer, output is appended in pieces this size
INFLATE_STEP: Final = 1 << 20  # most output one zlib call may make
# Most input one zlib call is given: a call stopped by INFLATE_STEP copies its unread input
# (unconsumed_tail), so bounding the slice keeps those copies to 1/16 of the output.
INFLATE_SLICE: Final = 1 << 16

# Each thread's zstd contexts (not to be shared between threads: zstandard's rule): making
# one costs ~15 us, which doubled the time of compressing a 10 kB sample.
_zstd_contexts: Final = threading.local()

# Imported compressor modules by name; a missing package is remembered as None.
_modules: dict[str, Optional[Any]] = {}


def compressor_module(name: str) -> Optional[Any]:
    if name not in _modules:
        target = {"lz4": "lz4.block", "zstd": "zstandard", "zlib": "zlib"}[name]
        try:
            _modules[name] = importlib.import_module(target)
        except ImportError:
            _modules[name] = None
    return _modules[name]


def available_compressions() -> list[str]:
    """The compressions usable in this process, best first."""
    return [name for name in COMPRESSIONS if compressor_module(name) is not None]


# Whether "auto" has said, in this process, that it found neither lz4 nor zstd.
_auto_warned: list[bool] = []


def warn_auto_compresses_nothing() -> None:
    """Say once per process that "auto" compresses nothing, where it is configured: it is
    resolved when an Encoder is made, and otherwise nothing would tell."""
    if _auto_warned:
        return
    _auto_warned.append(True)
    warnings.warn("compression='auto' found neither lz4 nor zstandard: nothing will be "
                  "compressed. Install one: pip install 'fastser[lz4]' (or 'fastser[zstd]')",
                  RuntimeWarning, stacklevel=outside_stacklevel())


def outside_stacklevel() -> int:
    """The stacklevel, for a warnings.warn called here, of the first frame outside fastser:
    the user's line, in both builds (compiled functions have no frames, pure ones do)."""
    frame: Optional[FrameType] = sys._getframe(0)
    if frame is not None and frame.f_code.co_name == "outside_stacklevel" and \
            frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back  # pure: this function's own frame; level 1 is its caller's
    level = 1
    while frame is not None and frame.f_back is not None and in_fastser(frame):
        frame = frame.f_back
        level += 1
    return level


def in_fastser(frame: FrameType) -> bool:
    # By module name: a compiled module's __file__ is not where it lies.
    name = frame.f_globals.get("__name__")
    return type(name) is str and (name == "fastser" or name.startswith("fastser."))


def check_compression(name: Optional[str]) -> Optional[str]:
    """The compression an Encoder will use for `name`: None, or an installed compressor.
    "auto" and "adaptive" pick lz4, else zstd, else None, and then warn (RuntimeWarning,
    once per process) that nothing will be compressed. Raises ValueError for an unknown
    name or one whose package is not installed."""
    if name is None:
        return None
    check_str(name, "compression")
    if name in CHOOSING:
        for candidate in AUTO_ORDER:
            if compressor_module(candidate) is not None:
                return candidate
        warn_auto_compresses_nothing()
        return None
    if name not in COMPRESSIONS:
        raise ValueError(f"unknown compression {name!r}: use None, 'auto', 'adaptive', "
                         f"{', '.join(repr(n) for n in COMPRESSIONS)}")
    if compressor_module(name) is None:
        package = EXTRA_PACKAGE[name]
        raise ValueError(f"compression {name!r} needs the package {package!r}, which is not "
                         f"installed: pip install 'fastser[{name}]'")
    return name


def compressor_choices(name: Optional[str]) -> tuple[str, ...]:
    """What an Encoder made with compression=`name` (checked) chooses among for a link:
    every installed one of lz4 and zstd for "adaptive", else the one compression."""
    if name == "adaptive":
        return tuple(n for n in AUTO_ORDER if compressor_module(n) is not None)
    resolved = check_compression(name)
    return () if resolved is None else (resolved,)


def compress(name: str, data: Any) -> bytes:
    """`data` compressed with `name`, an installed compression (see check_compression)."""
    if name == "zlib":
        return zlib.compress(data)
    module = compressor_module(name)
    if module is None:
        raise ValueError(f"compression {name!r} is not installed")
    if name == "lz4":
        result: bytes = module.compress(data, store_size=True)
    else:
        result = zstd_context(module, "compressor").compress(data)
    return result


def zstd_context(module: Any, kind: str) -> Any:
    """This thread's zstd "compressor" or "decompressor" (made on first use)."""
    context = getattr(_zstd_contexts, kind, None)
    if context is None:
        context = module.ZstdCompressor() if kind == "compressor" else module.ZstdDecompressor()
        setattr(_zstd_contexts, kind, context)
    return context


def sample(view: memoryview) -> bytes:
    """About 10 kB taken from five places spread over the frame."""
    size = view.nbytes
    step = size // SAMPLE_PIECES
    return b"".join(bytes(view[i * step:i * step + SAMPLE_PIECE_BYTES])
                    for i in range(SAMPLE_PIECES))


def maybe_compress(frame: Frame, name: str) -> tuple[Optional[str], Frame]:
    """(name, compressed bytes) when compressing `frame` saves at least 30 %; otherwise
    (None, frame) unchanged. Frames under 10,000 bytes are not tried, and a sample decides
    before the whole frame is compressed."""
    view = byte_view(frame)
    size = view.nbytes
    if size < MIN_COMPRESS_BYTES or size > MAX_COMPRESS_BYTES:
        return None, frame
    if size > SAMPLE_PIECES * SAMPLE_PIECE_BYTES * 2:
        probe = sample(view)
        if len(compress(name, probe)) > KEEP_RATIO * len(probe):
            return None, frame
    compressed = compress(name, view)
    if len(compressed) > KEEP_RATIO * size:
        return None, frame
    return name, compressed


def timed_ratio(name: str, probe: bytes) -> float:
    """The size `name` compresses `probe` to, as a fraction of its size; the time it took
    to compress and inflate counts in `name`'s running cost (one sample's time is too
    noisy to decide by alone). The sample is compressed and inflated twice and timed the
    second time: a first, cold run (the compressor's code and tables out of the caches,
    as they are between messages) took 5-6x as long a byte as a warm one, and as a whole
    frame does."""
    compressed = compress(name, probe)
    decompress(name, compressed, len(probe), writeable=False)
    start = time.perf_counter()
    compress(name, probe)
    compressed_at = time.perf_counter()
    decompress(name, compressed, len(probe), writeable=False)
    end = time.perf_counter()
    ratio = len(compressed) / len(probe)
    counted_cost(name, ratio, (compressed_at - start) / len(probe),
                 (end - compressed_at) / len(probe))
    return ratio


def adaptive_compress(frame: Frame, names: tuple[str, ...],
                      link: LinkRate) -> tuple[Optional[str], Frame]:
    """(name, compressed bytes) when compressing `frame` with one of `names` makes it arrive
    sooner on `link` (frames.adaptive), with the one that makes it soonest; otherwise (None,
    frame). While the link's rate is unknown, as maybe_compress with the first name."""
    if link.bytes_per_second == 0.0:
        return maybe_compress(frame, names[0])
    view = byte_view(frame)
    size = view.nbytes
    if size < MIN_COMPRESS_BYTES or size > MAX_COMPRESS_BYTES or \
            not worth_sampling(names, link):
        return None, frame
    probe = sample(view) if size > SAMPLE_PIECES * SAMPLE_PIECE_BYTES * 2 else bytes(view)
    best: Optional[str] = None
    best_time = 0.0
    for name in names:
        ratio = timed_ratio(name, probe)
        cost = cost_of(name)
        if pays(ratio, cost, link):
            spent = seconds_per_byte(ratio, cost, link)
            if best is None or spent < best_time:
                best, best_time = name, spent
    if best is None:
        return None, frame
    start, start_cpu = time.perf_counter(), time.thread_time()
    compressed = compress(best, view)
    counted_frame(best, size, len(compressed) / size, time.perf_counter() - start,
                  time.thread_time() - start_cpu)
    if len(compressed) >= size:
        return None, frame
    return best, compressed


def decompress(name: Any, frame: Frame, max_bytes: int, writeable: bool = True,
               limit: Optional[str] = None) -> Frame:
    """The frame that `frame` was compressed from with compression `name`, at most
    `max_bytes` long (a bytearray when `writeable`, else bytes or a bytearray); `limit`
    says in errors where that bound comes from (default: Limits.max_frame_bytes).
    Raises DeserializationError for an unknown or uninstalled compression, corrupt data,
    or output beyond `max_bytes`."""
    if type(name) is not str or name not in COMPRESSIONS:
        raise DeserializationError(f"payload compressed with unknown compression {shown(name)}")
    module = compressor_module(name)
    if module is None:
        raise DeserializationError(
            f"payload compressed with {name!r}, whose package {EXTRA_PACKAGE[name]!r} is not "
            f"installed here: pip install 'fastser[{name}]'")
    view = byte_view(frame)
    if limit is None:
        limit = f"Limits.max_frame_bytes={max_bytes}"
    try:
        if name == "lz4":
            return lz4_decompress(module, view, max_bytes, writeable, limit)
        if name == "zstd":
            return zstd_decompress(module, view, max_bytes, writeable, limit)
        return zlib_decompress(view, max_bytes, limit)
    except DeserializationError:
        raise
    except Exception as exc:
        raise chained(DeserializationError(
            f"corrupt {name} payload: {type(exc).__name__}: {exc}"), exc)


def too_large(name: str, size: int, limit: str) -> DeserializationError:
    return DeserializationError(
        f"{name} payload decompresses to {size} bytes or more, exceeding {limit}")


def lz4_decompress(module: Any, view: memoryview, max_bytes: int, writeable: bool,
                   limit: str) -> Frame:
    if view.nbytes < LZ4_SIZE_PREFIX:
        raise DeserializationError("lz4 payload shorter than its size prefix")
    size = int.from_bytes(view[:LZ4_SIZE_PREFIX], "little", signed=True)
    if size < 0 or size > max_bytes:
        raise too_large("lz4", size, limit)
    # lz4 allocates the stated size before it reads a byte: refuse what the block cannot hold.
    block = view.nbytes - LZ4_SIZE_PREFIX
    if size > LZ4_MAX_RATIO * block:
        raise DeserializationError(
            f"lz4 payload states {size} bytes, more than its {block} compressed bytes can "
            f"hold ({LZ4_MAX_RATIO} per byte)")
    result: Frame = module.decompress(view, return_bytearray=writeable)
    return result


def zstd_first_bytes(size: int, compressed: int) -> int:
    """The buffer a zstd frame stating `size` bytes in `compressed` bytes starts with."""
    return min(size, ZSTD_FIRST_RATIO * compressed + ZSTD_FIRST_SLACK)


def zstd_decompress(module: Any, view: memoryview, max_bytes: int, writeable: bool,
                    limit: str) -> Frame:
    size: int = module.frame_content_size(view)
    if size < 0:
        raise DeserializationError("zstd payload does not state its decompressed size")
    if size > max_bytes:
        raise too_large("zstd", size, limit)
    first = zstd_first_bytes(size, view.nbytes)
    if not writeable and first == size:
        # One shot into bytes of the stated size, which the compressed bytes may well hold;
        # the frame must be the whole payload, as the stream reader checks below.
        data: bytes = zstd_context(module, "decompressor").decompress(
            view, max_output_size=size, allow_extra_data=False)
        return data
    return zstd_stream(module, view, size, first)


def zstd_stream(module: Any, view: memoryview, size: int, first: int) -> bytearray:
    """A zstd frame stating `size` bytes decompressed straight into a buffer of `first`
    bytes, the buffer the payload will live in (no second copy for numpy); beyond it,
    the buffer grows (amortized) as output arrives, a cache-sized piece at a time: the
    stated size is an upper bound, never an allocation. (Growing by zero-filled doublings
    instead would write each byte twice.)"""
    out = bytearray(first)
    reader = zstd_context(module, "decompressor").stream_reader(view)
    filled = 0
    with memoryview(out) as target:  # released: a bytearray with a view cannot grow
        while filled < first:
            count: int = reader.readinto(target[filled:])
            if count == 0:
                break
            filled += count
    while filled == len(out) and filled < size:
        piece: bytes = reader.read(min(ZSTD_STEP, size - filled))
        out += piece
        filled += len(piece)
        if not piece:
            break
    if filled < size:
        raise DeserializationError(f"zstd payload ends after {filled} of its {size} bytes")
    if reader.read(1):
        raise DeserializationError(f"zstd payload holds more than its stated {size} bytes")
    return out


def zlib_decompress(view: memoryview, max_bytes: int, limit: str) -> bytearray:
    inflater = zlib.decompressobj()
    out = bytearray()
    end = view.nbytes
    start = 0
    while start < end and not inflater.eof:
        pending: Any = view[start:start + INFLATE_SLICE]
        start += INFLATE_SLICE
        while True:
            step = min(INFLATE_STEP, max_bytes - len(out) + 1)
            chunk = inflater.decompress(pending, step)
            out += chunk
            if len(out) > max_bytes:
                raise too_large("zlib", len(out), limit)
            pending = inflater.unconsumed_tail
            # A call that filled its step may hold more output, even with no input left.
            if inflater.eof or (not pending and len(chunk) < step):
                break
    out += inflater.flush()
    if len(out) > max_bytes:
        raise too_large("zlib", len(out), limit)
    if not inflater.eof:
        raise DeserializationError("zlib payload is truncated")
    # After the end, the rest is trailing bytes.
    if inflater.unused_data or inflater.unconsumed_tail or start < end:
        raise DeserializationError("zlib payload is followed by trailing bytes")
    return out


def compression_names(compression: Any, count: int) -> list[Any]:
    """A payload header's "compression" entry, checked: one name (or None) per frame."""
    if type(compression) is not list or len(compression) != count:
        raise DeserializationError(
            f"a payload header's compression {shown(compression)} does not name one compression "
            f"(or None) for each of its {count} frames")
    names: list[Any] = compression
    return names


def decompress_frames(compression: Any, frames: list[Frame], max_bytes: int) -> list[Frame]:
    """`frames` with each one that a header's "compression" list names decompressed (each
    at most `max_bytes`, writeable); the others as they are."""
    out: list[Frame] = []
    for name, frame in zip(compression_names(compression, len(frames)), frames):
        out.append(frame if name is None else decompress(name, frame, max_bytes))
    return out


class FrameCompressor:
    """How an Encoder compresses a frame: without a link, with names[0] where the frame's
    sample shrinks by 30 %; with one, by the one of `names` that makes the frame arrive
    soonest on it, where one does (adaptive_compress)."""

    def __init__(self, names: tuple[str, ...], link: Optional[LinkRate]) -> None:
        self.names = names
        self.link = link

    def compress_frame(self, frame: Frame) -> tuple[Optional[str], Frame]:
        if self.link is None:
            return maybe_compress(frame, self.names[0])
        return adaptive_compress(frame, self.names, self.link)


def compress_payload(header: Header, payload: list[Frame], compressor: FrameCompressor,
                     inflate_bound: Optional[Callable[[int], int]] = None) -> list[Frame]:
    """The payload with every frame that compresses well compressed; the header's
    "compression" lists what each frame went through (only when one did). With
    `inflate_bound`, a frame stays as it is where its size is past
    inflate_bound(compressed size): what a decoder allows such a frame to inflate to."""
    names: list[Optional[str]] = []
    frames: list[Frame] = []
    for original in payload:
        name, frame = compressor.compress_frame(original)
        if name is not None and inflate_bound is not None and \
                byte_view(original).nbytes > inflate_bound(len(frame)):
            name, frame = None, original
        names.append(name)
        frames.append(frame)
    if any(name is not None for name in names):
        header[HEADER_COMPRESSION] = names
        return frames
    return payload

"""The token scan of benchmarks/c_first.py: one pass over the msgpack that C packed, finding
what C may have packed silently that fastser's format writes otherwise. c_first.py compiles
it with mypyc (as fastser is compiled) and falls back to it interpreted, labelled so.

C (`msgpack.Packer(strict_types=True, default=hook)`) calls the hook for tuples, sets, ints
beyond 64 bits, subclasses and unknown objects, but writes these itself:
  - bytearray and memoryview (any size) as bin, like bytes: each bin token is a *hit*, whose
    path tells c_first.py where in the message the value was, to check it is a `bytes`;
  - msgpack.ExtType and msgpack.Timestamp as ext: each ext token is a hit too (the hook's
    own marks and extension types are ext tokens as well; the path tells them apart);
  - bytes-likes of 64 KiB or more as bin (a copy; fastser sends them as frames): `big`;
  - a list whose first item is the int -32 as an array led by 0xe0, as the hook writes a
    tuple: `leads` counts the arrays led by 0xe0, to compare with the tuples the hook made;
  - nesting deeper than the encoder's max_depth (msgpack's own limit is 1024): `deep`.

A path is one int per level, outermost first: the token's index in its container (an
array's items; a map's keys and values alternately, key first), times 2, plus 1 in a map.
"""

from collections.abc import Callable, Iterable
from typing import Any, Final, cast

import msgpack  # type: ignore[import-untyped,unused-ignore]

from mypy_extensions import i64

OUT_OF_BAND_BYTES: Final = 65536
HIT_BIN: Final = 1
HIT_EXT: Final = 2


class Scan:
    """What one scan found."""

    def __init__(self) -> None:
        self.leads = 0  # arrays whose first item is the int -32 (the byte 0xe0)
        self.big = False  # a bin token of OUT_OF_BAND_BYTES or more
        self.deep = False  # nested deeper than max_depth
        self.corrupt = False  # the bytes are not one msgpack object (a bug if ever set)
        # (HIT_BIN or HIT_EXT, ext code or -1, path)
        self.hits: list[tuple[int, int, list[int]]] = []


def uint(body: bytes, at: i64, size: i64) -> i64:
    """The big-endian unsigned int of `size` bytes at `at`."""
    value: i64 = 0
    for k in range(size):
        value = (value << 8) | body[at + k]
    return value


def path_of(tots: list[int], rems: list[int], cur_tot: int, cur_rem: int) -> list[int]:
    """The path of the token about to be read: each open container's index, outermost first.
    A container's tot is its token count times 2, plus 1 for a map."""
    path: list[int] = []
    if not tots:
        return path  # the top-level value itself
    for level in range(1, len(tots)):  # level 0 is the top value, not a container
        tot = tots[level]
        path.append(((tot >> 1) - rems[level]) * 2 + (tot & 1))
    path.append(((cur_tot >> 1) - cur_rem) * 2 + (cur_tot & 1))
    return path


def scan(body: bytes, start: int, max_depth: int) -> Scan:
    """Scan the msgpack object at body[start:]."""
    out = Scan()
    n: i64 = len(body)
    i: i64 = start
    # The open containers: the innermost's count of tokens still to come (`cur_rem`) and
    # its tot (tokens * 2 + is_map) in locals, the outer ones' on the two stacks.
    rems: list[int] = []
    tots: list[int] = []
    cur_rem: i64 = 1  # the top-level value: one token
    cur_tot: i64 = 2
    depth: i64 = 0
    leads: i64 = 0
    size: i64 = 0
    is_map: i64 = 0
    length: i64 = 0
    width: i64 = 0
    while i < n:
        b: i64 = body[i]
        if b < 0x80 or b >= 0xe0:  # fixint, negative fixint
            i += 1
        elif b >= 0xa0 and b < 0xc0:  # fixstr
            i += 1 + (b & 0x1f)
        elif b < 0xa0 or b == 0xdc or b == 0xdd or b == 0xde or b == 0xdf:
            # fixmap, fixarray, array16/32, map16/32
            if b < 0x90:
                size = (b & 0x0f) * 2
                is_map = 1
                i += 1
            elif b < 0xa0:
                size = b & 0x0f
                is_map = 0
                i += 1
            elif b == 0xdc or b == 0xde:
                size = uint(body, i + 1, 2)
                is_map = 1 if b == 0xde else 0
                size = size * 2 if is_map else size
                i += 3
            else:
                size = uint(body, i + 1, 4)
                is_map = 1 if b == 0xdf else 0
                size = size * 2 if is_map else size
                i += 5
            if size:
                if not is_map and i < n and body[i] == 0xe0:
                    leads += 1
                rems.append(cur_rem)
                tots.append(cur_tot)
                cur_rem = size
                cur_tot = size * 2 + is_map
                depth += 1
                if depth > max_depth:
                    out.deep = True
                    return out
                continue
        elif b == 0xcb:  # float64
            i += 9
        elif b == 0xd9:  # str8
            i += 2 + body[i + 1]
        elif b <= 0xc3:  # nil, (unused), false, true
            i += 1
        elif b == 0xcc or b == 0xd0:
            i += 2
        elif b == 0xcd or b == 0xd1:
            i += 3
        elif b == 0xce or b == 0xd2 or b == 0xca:
            i += 5
        elif b == 0xcf or b == 0xd3:
            i += 9
        elif b == 0xda:
            i += 3 + uint(body, i + 1, 2)
        elif b == 0xdb:
            i += 5 + uint(body, i + 1, 4)
        elif b == 0xc4 or b == 0xc5 or b == 0xc6:  # bin
            width = 1 if b == 0xc4 else 2 if b == 0xc5 else 4
            length = uint(body, i + 1, width)
            if length >= OUT_OF_BAND_BYTES:
                out.big = True
                return out
            out.hits.append((HIT_BIN, -1, path_of(tots, rems, cur_tot, cur_rem)))
            i += 1 + width + length
        else:  # ext: fixext 1..16 (d4..d8), ext 8/16/32 (c7..c9)
            if b >= 0xd4:
                length = 1 << (b - 0xd4)
                code = body[i + 1]
                i += 2 + length
            else:
                width = 1 if b == 0xc7 else 2 if b == 0xc8 else 4
                length = uint(body, i + 1, width)
                code = body[i + 1 + width]
                i += 2 + width + length
            out.hits.append((HIT_EXT, code, path_of(tots, rems, cur_tot, cur_rem)))
        # A value is complete: close every container it completes.
        cur_rem -= 1
        while cur_rem == 0:
            if not rems:
                out.leads = leads
                out.corrupt = i != n
                return out
            cur_rem = rems.pop() - 1
            cur_tot = tots.pop()
            depth -= 1
    out.corrupt = True
    return out


# --- checking the hits against the message ---------------------------------------------

MIN_INT64: Final = -(2**63)
MAX_UINT64: Final = 2**64 - 1


def plain_at(msg: object, kind: int, path: list[int],
             entries: dict[int, list[tuple[Any, Any]]]) -> bool:
    """Whether the hit of `kind` at `path` came from what fastser's format writes so:
    a `bytes` under 64 KiB for a bin; for an ext, a set's or frozenset's mark, an int beyond
    64 bits, or anything inside what the hook made of an object (a record, as the walk
    would make it). Follows the path through dicts (a map's n-th entry), lists and tuples
    (whose array has the lead first). False sends the message to the walk: a bytearray,
    memoryview, ExtType or Timestamp; also, conservatively, an ext inside a dict key or a
    set item (the walk makes records there hashable) and any path it cannot follow.
    `entries`: each dict's items met so far, by id (a dict of many hits is listed once)."""
    obj = msg
    in_key = False
    last = len(path) - 1
    for pos in range(len(path)):
        index = path[pos] >> 1
        t = type(obj)
        if t is dict:
            entry = index >> 1
            listed = entries.get(id(obj))
            if listed is None:
                listed = entries[id(obj)] = list(cast(dict[Any, Any], obj).items())
            if entry >= len(listed):
                return False
            if index & 1:
                obj = listed[entry][1]
            else:
                obj = listed[entry][0]
                in_key = True
        elif t is list:
            items = cast(list[Any], obj)
            if index >= len(items):
                return False
            obj = items[index]
        elif t is tuple:
            fields = cast(tuple[Any, ...], obj)
            if index == 0 or index > len(fields):
                return False  # the lead is an int, never a hit
            obj = fields[index - 1]
        elif t is set or t is frozenset:
            # [mark, *items]: the mark is the hook's; an item would need the walk (records
            # in a set item must be hashable)
            return kind == HIT_EXT and index == 0 and pos == last and not in_key
        else:
            break  # the hook made this object's form: everything below is its own
    t = type(obj)
    if t is bytes:
        return kind == HIT_BIN
    if t is bytearray or t is memoryview or t is msgpack.ExtType or t is msgpack.Timestamp:
        return False
    if t is dict or t is list or t is tuple or t is set or t is frozenset or t is str \
            or t is float or t is bool or obj is None:
        return False  # a path that ends on a container or a plain value: not ours
    if t is int:
        value = cast(int, obj)
        return kind == HIT_EXT and not in_key and (value < MIN_INT64 or value > MAX_UINT64)
    return not in_key or kind == HIT_BIN  # a record; in a key, only the walk makes it right


def all_plain(msg: object, found: Scan) -> bool:
    entries: dict[int, list[tuple[Any, Any]]] = {}
    for kind, code, path in found.hits:
        if not plain_at(msg, kind, path, entries):
            return False
    return True


# --- the decoding side: what a list_hook must do for each tuple representation ---------

TUPLE_LEAD: Final = -32


def tuple_lead_hook(items: list[Any]) -> Any:
    """list_hook for tuples written as arrays led by the int -32."""
    if items:
        first = items[0]
        if type(first) is int and first == TUPLE_LEAD:
            return tuple(items[1:])
    return items


class MarkSentinel:
    pass


TUPLE_SENTINEL: Final = MarkSentinel()


def tuple_mark_ext_hook(code: int, data: bytes) -> Any:
    """ext_hook for tuples written as arrays led by an empty extension type (the mark)."""
    return TUPLE_SENTINEL


def tuple_mark_list_hook(items: list[Any]) -> Any:
    if items and items[0] is TUPLE_SENTINEL:
        return tuple(items[1:])
    return items


# --- the prototype encoder --------------------------------------------------------------

# The bin and ext lead bytes (a bytearray, memoryview, ExtType or Timestamp starts with one
# of these), for the byte check: one memchr each, false positives (the byte inside a number
# or a string) go on to the scan.
SUSPECT_BYTES: Final = (0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8)


def bytes_clear(body: bytes, tuples: int) -> bool:
    """The byte check: no bin or ext lead byte in the header, and as many bytes 0xe0 as
    tuples the hook made (each tuple's lead is one; a list led by -32 would add one)."""
    for suspect in SUSPECT_BYTES:
        if suspect in body:
            return False
    return body.count(b"\xe0") == tuples


class CFirst:
    """Pack in C first; walk only a message the check cannot clear.

    The hook makes what fastser's format writes for a tuple (an array led by -32), a set or
    frozenset (an array led by its mark), an int beyond 64 bits (ext 1), and, through the
    encoder's own encode_object, a record for anything else (wrappers, subclasses, other
    objects). `check`: "scan" scans every message; "bytes" first tries, on a header under
    64 KiB, the byte check (no bin or ext lead byte anywhere, and as many 0xe0 bytes as
    tuples the hook made), which bounds nesting only by msgpack's own 1024 levels, and
    scans when it fails. The encoder's own dumps (the walk) is the fallback.
    """

    def __init__(self, encoder: Any, new_state: Callable[[], Any], marks: list[object],
                 ext: Callable[[int, bytes], object], version: bytes, max_depth: int,
                 check: str) -> None:
        self.encoder = encoder
        self.new_state = new_state
        self.set_mark = marks[0]
        self.frozenset_mark = marks[1]
        self.ext = ext
        self.version = version
        self.max_depth = max_depth
        self.bytes_first = check == "bytes"
        self.tuples = 0
        self.state: Any = None
        self.walked = 0  # messages the check sent to the walk
        self.packer: Any = msgpack.Packer(autoreset=True, use_bin_type=True,
                                          strict_types=True, default=self.hook)

    def hook(self, obj: object) -> object:
        t = type(obj)
        if t is tuple:
            self.tuples += 1
            out: list[Any] = [TUPLE_LEAD]
            out.extend(cast(tuple[Any, ...], obj))
            return out
        if t is set or t is frozenset:
            marked: list[Any] = [self.set_mark if t is set else self.frozenset_mark]
            marked.extend(cast(Iterable[Any], obj))
            return marked
        if t is int:  # C calls the hook for an int only when it is beyond 64 bits
            value = cast(int, obj)
            return self.ext(1, value.to_bytes((value.bit_length() + 8) // 8, "little",
                                              signed=True))
        state = self.state
        if state is None:
            state = self.state = self.new_state()
        return self.encoder.encode_object(obj, 0, state)

    def dumps(self, msg: object) -> list[Any]:
        self.tuples = 0
        self.state = None
        try:
            body: bytes = self.packer.pack(msg)
        except Exception:  # a non-contiguous memoryview, too deep: the walk says what
            return self.walk(msg)
        if not self.plain(msg, body):
            return self.walk(msg)
        state = self.state
        if state is None:
            return [self.version + body]
        frames: list[Any] = state.frames
        frames[0] = self.version + body
        return frames

    def plain(self, msg: object, body: bytes) -> bool:
        """Whether C wrote `msg` as fastser's format does (no false positive here sends a
        message that needs the walk past it)."""
        if self.bytes_first and len(body) < OUT_OF_BAND_BYTES and self.state is None \
                and bytes_clear(body, self.tuples):
            return True
        found = scan(body, 0, self.max_depth)
        if found.big or found.deep or found.corrupt or found.leads != self.tuples:
            return False
        return all_plain(msg, found)

    def walk(self, msg: object) -> list[Any]:
        self.walked += 1
        return cast(list[Any], self.encoder.dumps(msg))

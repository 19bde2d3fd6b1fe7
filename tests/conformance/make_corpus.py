#!/usr/bin/env python3
"""Rewrites tests/conformance/frames/*.bin from tests/conformance/cases.json: every case that
dumps writes with the installed fastser's dumps (its "value", with its "options"); the others
(forms dumps never writes, and the refusals) from the byte-level descriptions below. The same
input gives the same bytes on every run.

    python tests/conformance/make_corpus.py [--check]

--check writes nothing and exits 1 if a file would change. Run it from anywhere but the
repository root with the build you mean to freeze installed (`.envs/compiled/bin/python
tests/conformance/make_corpus.py` from the root works too: the script puts only tests/ on
its path, so fastser comes from the environment). A changed .bin file is a wire-format change.
"""

import pathlib
import struct
import sys

sys.path[0] = str(pathlib.Path(__file__).resolve().parent.parent)  # tests/, for tagged

import fastser  # noqa: E402
from tagged import FRAMES_DIR, Case, frames_file, is_encoded, load_cases, value_of  # noqa: E402

# A hand-built message: its frames, each hex (spaces ignored). After the version byte 01,
# frame 0 is msgpack: 9x fixarray, 8x fixmap, c0 nil, c4 bin 8, a0-bf fixstr, e0-ff negative
# fixint, d4 fixext 1 (code, 1 byte), d6 fixext 4, c7 ext 8 (length, code, data).
HAND_BUILT: dict[str, list[str]] = {
    # forms the decoder reads and dumps does not write
    "read_small_frame_ref": ["01 91 d4 04 01", "616263"],  # [ext 4: ref 1]
    "read_inline_bin_ref": ["01 91 c7 05 05 c4 03 616263"],  # [ext 5: bin "abc"]
    "read_split_small": ["01 91 c7 03 06 92 01 03", "6162", "6364", "6566"],  # [ext 6: [1, 3]]
    "read_tuple_led_by_ext_1": ["01 93 d4 01 e0 01 02"],  # [ext 1: -32, 1, 2]
    "read_ext_1_empty": ["01 c7 00 01"],  # ext 1, no data
    "read_equal_keys": ["01 83 01 02 cb 3ff0000000000000 03 c3 04"],  # {1: 2, 1.0: 3, true: 4}
    "read_compressed_frame_ref": [  # [ext 4: [1, "zlib"]], frame 1 zlib of 20,000 zero bytes
        "01 91 c7 07 04 92 01 a4 7a6c6962",
        "789cedc13101000000c2a0f54f6d0d0fa00000000000000000000000000000000000000078304e200001"],
    # values msgpack has
    "refuse_str_not_utf8": ["01 a2 fffe"],
    "refuse_array_as_map_key": ["01 81 92 01 02 c0"],  # {[1, 2]: nil}
    "refuse_bytearray_as_set_item": ["01 92 c7 00 09 d4 02 61"],  # [9, ext 2: "a"]
    # the header frame
    "refuse_version_0": ["00 c0"],
    "refuse_version_2": ["02 c0"],
    "refuse_empty_header": [""],
    "refuse_two_objects": ["01 c0 c0"],
    "refuse_truncated_header": ["01 92 01"],  # an array of 2 holding one item
    # marks (9 set, 11 list): an empty ext 8 is c7 00 <code>
    "refuse_mark_not_first": ["01 92 01 c7 00 09"],
    "refuse_mark_alone": ["01 c7 00 09"],
    "refuse_mark_as_map_key": ["01 81 c7 00 0b 01"],
    "refuse_mark_with_data": ["01 91 d4 09 00"],
    # ext codes outside the format
    "refuse_ext_0": ["01 d4 00 00"],
    "refuse_ext_15": ["01 d4 0f 00"],
    "refuse_ext_minus_2": ["01 d4 fe 00"],
    "refuse_ext_minus_1_timestamp": ["01 d6 ff 00000001"],  # 1970-01-01T00:00:01Z
    # frame refs: ext 4 (a bytes frame) holding msgpack of the ref
    "refuse_frame_named_twice": ["01 92 d4 04 01 d4 04 01", "78"],
    "refuse_frame_never_named": ["01 c0", "78"],
    "refuse_ref_past_end": ["01 d4 04 02", "78"],
    "refuse_ref_zero": ["01 d4 04 00", "78"],
    "refuse_ref_negative": ["01 d4 04 ff", "78"],
    "refuse_split_ref_past_end": ["01 c7 03 04 92 01 03", "78", "79"],
    "refuse_split_ref_zero_count": ["01 c7 03 04 92 01 00", "78"],
    "refuse_ref_str": ["01 c7 02 04 a1 78"],
    "refuse_compressed_ref_no_name": ["01 c7 03 04 92 01 c0", "78"],  # [1, nil]
    # short numpy records: [14, dtype, flags, ref, *shape], "<i2" is a3 3c6932
    "refuse_short_record_bad_flags": ["01 95 c7 00 0e a3 3c6932 04 c4 02 0000 01"],
    "refuse_short_record_dtype_not_str": ["01 95 c7 00 0e 01 02 c4 02 0000 01"],
    "refuse_short_record_negative_dim": ["01 95 c7 00 0e a3 3c6932 02 c4 02 0000 ff"],
    "refuse_short_record_65_dims": ["01 dc 0045 c7 00 0e a3 3c6932 02 c4 02 0000" + " 01" * 65],
    "refuse_short_record_no_ref": ["01 93 c7 00 0e a3 3c6932 02"],
    # records: [12 or 13, header, refs], ext 7 [header, refs]
    "refuse_record_two_items": ["01 92 c7 00 0c 80"],
    "refuse_record_header_not_map": ["01 93 c7 00 0d 90 90"],
    "refuse_record_refs_a_tuple": ["01 93 c7 00 0c 80 91 e0"],  # refs (-32,): a tuple
    "refuse_ext_record_not_pair": ["01 81 c7 01 07 c0 01"],  # {ext 7 holding nil: 1}
    # {ext 7 holding [{"x": ext}, []]: 1}: fixext 1 of code 3, fixext 4 of code -1
    "refuse_ext_in_ext_record_header": ["01 81 c7 08 07 92 81 a1 78 d4 03 00 90 01"],
    "refuse_timestamp_in_ext_record_header": [
        "01 81 c7 0b 07 92 81 a1 78 d6 ff 00000001 90 01"],
    # compressed frame refs: ext 4 holding [1, name]
    "refuse_unknown_compression": ["01 c7 09 04 92 01 a6 736e61707079", "78"],  # "snappy"
    "refuse_corrupt_zlib": ["01 c7 07 04 92 01 a4 7a6c6962", "78787878"],
    # Limits
    "refuse_too_deep": ["01" + " 91" * 257 + " c0"],
}

# A hand-built stream, whole (hex): uint64 little-endian count, the lengths, the frames.
HAND_BUILT_STREAMS: dict[str, str] = {
    "refuse_no_frames": "0000000000000000",
    "refuse_stream_truncated": "0100000000000000 0500000000000000 6162",
    "refuse_stream_trailing_bytes": "0100000000000000 0200000000000000 01c0 ff",
    # 1,200 frames (the header 01c0, then empty ones) in 9,610 bytes: more than 1,024 + 9,610 // 64
    "refuse_frames_past_their_bytes": ("b004000000000000 0200000000000000"
                                       + " 0000000000000000" * 1199 + " 01c0"),
}


def hand_built_stream(frames: list[str]) -> bytes:
    """pack_frames' layout, written out here rather than by fastser."""
    data = [bytes.fromhex(frame) for frame in frames]
    prelude = struct.pack(f"<{len(data) + 1}Q", len(data), *[len(frame) for frame in data])
    return prelude + b"".join(data)


def corpus_file(case: Case) -> bytes:
    """The bytes of a case's frames file."""
    name = case["name"]
    if is_encoded(case):
        frames = fastser.dumps(value_of(case["value"]), **case.get("options", {}))
        return fastser.pack_frames(frames)
    if name in HAND_BUILT_STREAMS:
        return bytes.fromhex(HAND_BUILT_STREAMS[name])
    return hand_built_stream(HAND_BUILT[name])


def main(argv: list[str]) -> int:
    check = argv[1:] == ["--check"]
    cases = load_cases()
    names = {case["name"] for case in cases}
    hand_built = {case["name"] for case in cases if not is_encoded(case)}
    described = set(HAND_BUILT) | set(HAND_BUILT_STREAMS)
    if hand_built != described:
        print(f"hand-built cases without bytes: {sorted(hand_built - described)}; "
              f"bytes without a case: {sorted(described - hand_built)}", file=sys.stderr)
        return 1
    changed = []
    for case in cases:
        path = frames_file(case)
        data = corpus_file(case)
        if not path.exists() or path.read_bytes() != data:
            changed.append(path.name)
            if not check:
                FRAMES_DIR.mkdir(exist_ok=True)
                path.write_bytes(data)
    stale = [path for path in sorted(FRAMES_DIR.glob("*.bin")) if path.stem not in names]
    for path in stale:
        changed.append(path.name)
        if not check:
            path.unlink()
    print(f"fastser from {pathlib.Path(fastser.__file__).parent} (COMPILED={fastser.COMPILED}): "
          f"{len(cases)} cases, {len(changed)} files {'to change' if check else 'changed'}"
          f"{': ' + ', '.join(changed) if changed else ''}")
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

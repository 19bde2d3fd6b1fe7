"""The corpus's message kinds as workloads of benchmarks/harness.py's worker (bench.py starts
one worker per fastser build with this module): for each kind, fastser's dumps and loads
as its fastser:// comm calls them, and, in the compiled build's worker, the anchors:
distributed.protocol as its tcp:// comm calls them, pickle protocol 5 with out-of-band
buffers, and msgspec where the message is plain msgpack.

The receiver decides loads: a message to the scheduler is decoded as the scheduler does
(distributed: deserialize=False; fastser: deserialize=False with ToPickle opened and kept
payloads as distributed's Serialized, as FastserComm.decoder makes it), any other with
deserialize=True.
"""

import os
import sys
from typing import Any, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS = os.path.dirname(HERE)
sys.path.insert(0, BENCHMARKS)

import shapes  # noqa: E402
from suite_workloads import (CONTEXT, Built, distributed_codec, pickle_dumps,  # noqa: E402
                             pickle_loads, received_distributed_tcp, received_one_buffer)


KINDS = {entry["kind"]: entry for entry in shapes.load_corpus()["kinds"]}
WORKLOADS = {name: f"{entry['message_share']:.1%} of messages, {entry['byte_share']:.1%} of "
             f"bytes, to the {entry['receiver']}" for name, entry in KINDS.items()}


def fastser_codec(to_scheduler: bool) -> tuple[Any, Any]:
    """The Encoder and Decoder a fastser:// comm makes for Comm.write(msg) and Comm.read()."""
    from distributed.comm.tcp import TCP
    try:
        from fastser.dask.codecs import make_decoder, make_encoder
    except ImportError:  # a build from before the dask package was split (forms.py, 7b18340)
        from fastser.dask import make_decoder, make_encoder  # type: ignore[attr-defined,no-redef]

    return (make_encoder(None, "message", CONTEXT, TCP.max_shard_size),
            make_decoder(not to_scheduler, None))


def msgpack_plain(msg: Any) -> Optional[bytes]:
    """msgspec's encoding of `msg` if it is plain msgpack (no payload objects), else None."""
    import msgspec
    try:
        return msgspec.msgpack.encode(msg)
    except Exception:
        return None


def build(name: str, anchors: bool) -> Built:
    entry = KINDS[name]
    to_scheduler = entry["receiver"] == "scheduler"
    built = Built()
    msg = shapes.build(entry["shape"], "fastser")
    encoder, decoder = fastser_codec(to_scheduler)
    frames = received_one_buffer(encoder.dumps(msg))
    built.fns["fastser"] = {"dumps": lambda: encoder.dumps(msg),
                            "loads": lambda: decoder.loads(frames)}
    built.keep.append(msg)
    sent = {"fastser": encoder.dumps(msg)}
    if anchors:
        d_msg = shapes.build(entry["shape"], "distributed")
        d_dumps, d_loads = distributed_codec(None, not to_scheduler)
        d_frames = received_distributed_tcp(d_dumps(d_msg))
        built.fns["distributed"] = {"dumps": lambda: d_dumps(d_msg),
                                    "loads": lambda: d_loads(d_frames)}
        sent["distributed"] = d_dumps(d_msg)
        plain = shapes.build(entry["shape"], "plain")
        p_frames = received_one_buffer(pickle_dumps(plain))
        built.fns["pickle5"] = {"dumps": lambda: pickle_dumps(plain),
                                "loads": lambda: pickle_loads(p_frames)}
        sent["pickle5"] = pickle_dumps(plain)
        encoded = msgpack_plain(plain)
        if encoded is not None:
            import msgspec
            built.fns["msgspec"] = {"dumps": lambda: msgspec.msgpack.encode(plain),
                                    "loads": lambda: msgspec.msgpack.decode(encoded)}
        built.keep += [d_msg, plain]
    built.info["frames"] = {codec: {"frames": len(out),
                                    "bytes": sum(memoryview(f).nbytes for f in out)}
                            for codec, out in sent.items()}
    built.info["receiver"] = entry["receiver"]
    return built


def check_roundtrip(name: str, built: Built) -> Optional[str]:
    for contestant, fns in built.fns.items():
        result = fns["loads"]()
        if result is None and KINDS[name]["shape"]["t"] != "none":
            return f"{contestant}: loads returned None"
    return None


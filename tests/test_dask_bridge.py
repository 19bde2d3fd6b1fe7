"""The bridge between fastser:// and tcp:// (fastser.dask.bridge): distributed's
Serialize, Serialized, ToPickle and Pickled cross a fastser:// scheduler and back onto
distributed's own codec unchanged. Skipped without distributed (the dask extra)."""

import operator
from typing import Any

import pytest

pytest.importorskip("distributed")

import numpy as np  # noqa: E402
from distributed.protocol.core import dumps as distributed_dumps  # noqa: E402
from distributed.protocol.core import loads as distributed_loads  # noqa: E402
from distributed.protocol.serialize import Pickled as DPickled  # noqa: E402
from distributed.protocol.serialize import Serialize as DSerialize  # noqa: E402
from distributed.protocol.serialize import Serialized as DSerialized  # noqa: E402
from distributed.protocol.serialize import ToPickle as DToPickle  # noqa: E402
from distributed.protocol.serialize import serialize as distributed_serialize  # noqa: E402

import fastser  # noqa: E402
from fastser import Decoder, Encoder  # noqa: E402
from fastser.dask.bridge import (FastserSerialized, distributed_to_fastser,  # noqa: E402
                                  fastser_to_distributed)


def encode_for_scheduler(msg: Any) -> Any:
    """msg written by a worker or client over fastser:// and read by the scheduler."""
    frames = Encoder(default=distributed_to_fastser).dumps(msg)
    return Decoder(deserialize=False, open_pickled=True,
                   serialized_factory=fastser_to_distributed).loads(frames), frames


def test_scheduler_keeps_payloads_and_opens_topickle() -> None:
    array = np.arange(100_000)
    kept, frames = encode_for_scheduler(
        {"data": DSerialize(array), "code": DToPickle(operator.add), "other": {1, 2}})
    assert type(kept["data"]) is FastserSerialized
    assert isinstance(kept["data"], DSerialized)
    assert kept["code"] is operator.add and kept["other"] == {1, 2}
    # Forwarded on fastser:// unchanged: the same frames, byte for byte.
    again = Encoder(default=distributed_to_fastser).dumps(
        {"data": kept["data"], "code": DToPickle(operator.add), "other": {1, 2}})
    assert [bytes(f) for f in again] == [bytes(f) for f in frames]
    # Opened where deserialize=True (a worker).
    out = Decoder().loads(again)
    np.testing.assert_array_equal(out["data"], array)


def test_payload_crosses_from_fastser_to_tcp() -> None:
    array = np.arange(100_000)
    kept, _ = encode_for_scheduler({"data": DSerialize(array)})
    # The scheduler forwards it to a tcp:// peer: distributed's own codec, family "fastser".
    frames = distributed_dumps({"data": kept["data"]})
    np.testing.assert_array_equal(distributed_loads(frames)["data"], array)
    # And back from a tcp:// scheduler onto fastser://: still the fastser payload.
    on_tcp = distributed_loads(distributed_dumps({"data": kept["data"]}), deserialize=False)
    back = Encoder(default=distributed_to_fastser).dumps(on_tcp)
    np.testing.assert_array_equal(Decoder().loads(back)["data"], array)


def test_payload_crosses_from_tcp_to_fastser() -> None:
    value = {"a": np.arange(10), "b": b"x" * 100_000}
    header, frames = distributed_serialize(value)
    kept, _ = encode_for_scheduler({"data": DSerialized(header, frames)})
    # A scheduler gets distributed's header back, as distributed's own codec makes it.
    assert type(kept["data"]) is DSerialized
    assert kept["data"].header.keys() == header.keys()
    assert type(header["sub-headers"]) is list
    assert type(kept["data"].header["sub-headers"]) is tuple  # as msgpack gives it on tcp://
    out = Decoder().loads(Encoder(default=distributed_to_fastser).dumps(kept))
    np.testing.assert_array_equal(out["data"]["a"], value["a"])
    assert out["data"]["b"] == value["b"]


def test_distributed_pickled_is_opened() -> None:
    pickled = distributed_loads(distributed_dumps({"p": DToPickle(np.arange(5))}),
                                deserialize=False)
    msg = {"p": DPickled({"pickled-obj": fastser.serialize([1, 2], ["pickle"])[1][0]}, [])}
    assert Decoder().loads(Encoder(default=distributed_to_fastser).dumps(msg)) == {"p": [1, 2]}
    np.testing.assert_array_equal(pickled["p"], np.arange(5))


def test_distributed_family_fastser_on_plain_tcp() -> None:
    # The preload recipe of docs/dask.md: serializers=["fastser", ...] on tcp:// comms.
    frames = distributed_dumps({"x": DSerialize(np.arange(1000))},
                               serializers=["fastser", "pickle"])
    np.testing.assert_array_equal(distributed_loads(frames)["x"], np.arange(1000))

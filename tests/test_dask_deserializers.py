# mypy: disallow-untyped-calls=False
# (distributed leaves listen, connect, Serialize, Serialized and Client unannotated)
"""fastser:// reads no more than tcp:// does: the same message read with the same
`deserializers` on both schemes ends the same way (a value or TypeError). distributed
opens ToPickle parts whatever the list, and a data payload only by a family it names."""

import asyncio
import contextlib
import fractions
import operator
from collections.abc import AsyncIterator, Callable
from typing import Any, Optional

import pytest

pytest.importorskip("distributed")

import numpy as np  # noqa: E402
from distributed import Client, Scheduler, Worker  # noqa: E402
from distributed.comm.core import connect, listen  # noqa: E402
from distributed.protocol.serialize import Serialize, Serialized, ToPickle  # noqa: E402

import fastser.dask  # noqa: E402, F401  (registers fastser://)

TIMEOUT = 30.0
SCHEMES = ("tcp", "fastser")
HALF = fractions.Fraction(1, 2)  # msgpack cannot take it: distributed pickles it


@contextlib.asynccontextmanager
async def comm_pair(scheme: str, deserialize: bool = True) -> AsyncIterator[tuple[Any, Any]]:
    """(reading end, writing end) of one connection; the reading end is the accepted one,
    made with `deserialize` (False: as the scheduler's)."""
    received: asyncio.Queue[Any] = asyncio.Queue()

    async def handle(comm: Any) -> None:
        await received.put(comm)

    async with listen(f"{scheme}://127.0.0.1", handle, deserialize=deserialize) as listener:
        writer = await connect(listener.contact_address, timeout=TIMEOUT)
        reader = await received.get()
        try:
            yield reader, writer
        finally:
            await writer.close()
            await reader.close()


def outcome(value: Any) -> Any:
    """What a read gave, comparable across schemes."""
    if isinstance(value, BaseException):
        return type(value).__name__
    if isinstance(value, dict):
        return {key: outcome(item) for key, item in value.items()}
    if isinstance(value, Serialized):
        return "kept"
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


async def read_back(scheme: str, msg: Any, deserializers: Optional[list[str]],
                    deserialize: bool = True,
                    serializers: Optional[list[str]] = None) -> Any:
    async with comm_pair(scheme, deserialize) as (reader, writer):
        await writer.write(msg, serializers=serializers)
        try:
            return outcome(await reader.read(deserializers=deserializers))
        except TypeError as exc:
            return outcome(exc)


CASES: list[tuple[str, Callable[[], Any], Optional[list[str]], bool, Any]] = [
    # ToPickle is opened whatever the deserializers (distributed's "__Pickled__").
    ("topickle, msgpack only", lambda: {"x": ToPickle(HALF)}, ["msgpack"], True, {"x": HALF}),
    ("topickle, none allowed", lambda: {"x": ToPickle(HALF)}, [], True, {"x": HALF}),
    # A pickled data payload is opened only with "pickle" in the list.
    ("pickled payload, msgpack only", lambda: {"x": Serialize(HALF)}, ["msgpack"], True,
     "TypeError"),
    ("pickled payload, pickle", lambda: {"x": Serialize(HALF)}, ["pickle"], True, {"x": HALF}),
    ("both, msgpack only", lambda: {"a": ToPickle(HALF), "b": Serialize(HALF)}, ["msgpack"],
     True, "TypeError"),
    # An array ("dask" on tcp://, fastser's "dispatch") needs "dask".
    ("array, pickle and msgpack", lambda: {"x": Serialize(np.arange(3))}, ["pickle", "msgpack"],
     True, "TypeError"),
    ("array, dask", lambda: {"x": Serialize(np.arange(3))}, ["dask"], True, {"x": [0, 1, 2]}),
    # The scheduler (deserialize=False) keeps payloads and opens ToPickle, whatever the list.
    ("scheduler, msgpack only", lambda: {"a": ToPickle(HALF), "b": Serialize(HALF)}, ["msgpack"],
     False, {"a": HALF, "b": "kept"}),
]


@pytest.mark.parametrize("name, make, deserializers, deserialize, expected", CASES,
                         ids=[case[0] for case in CASES])
def test_a_read_ends_as_on_tcp(name: str, make: Callable[[], Any],
                               deserializers: Optional[list[str]], deserialize: bool,
                               expected: Any) -> None:
    async def both() -> list[Any]:
        return [await read_back(scheme, make(), deserializers, deserialize)
                for scheme in SCHEMES]

    tcp, fastser_ = asyncio.run(asyncio.wait_for(both(), TIMEOUT))
    assert tcp == expected
    assert fastser_ == tcp


def test_an_error_payload_raises_type_error_as_on_tcp() -> None:
    # Written with msgpack only, an array becomes an "error" payload: both schemes' readers
    # raise TypeError, whatever their list.
    async def both() -> list[Any]:
        return [await read_back(scheme, {"x": Serialize(np.arange(3))}, deserializers,
                                serializers=["msgpack"])
                for scheme in SCHEMES for deserializers in (None, ["msgpack"])]

    assert asyncio.run(asyncio.wait_for(both(), TIMEOUT)) == ["TypeError"] * 4


def test_a_payload_bridged_from_tcp_is_checked_by_its_own_family() -> None:
    # A payload distributed serialized (it reaches fastser:// as the "distributed" family,
    # through a scheduler between schemes) is refused or opened as tcp:// would.
    from distributed.protocol.serialize import serialize as distributed_serialize

    pickled = Serialized(*distributed_serialize(HALF, serializers=["pickle"]))
    packed = Serialized(*distributed_serialize([1, 2], serializers=["msgpack"]))

    async def run() -> list[Any]:
        return [await read_back(scheme, {"x": payload}, deserializers)
                for scheme in SCHEMES
                for payload, deserializers in ((pickled, ["msgpack"]), (pickled, ["pickle"]),
                                               (packed, ["msgpack"]))]

    tcp_a, tcp_b, tcp_c, fs_a, fs_b, fs_c = asyncio.run(asyncio.wait_for(run(), TIMEOUT))
    assert (tcp_a, tcp_b, tcp_c) == ("TypeError", {"x": HALF}, {"x": [1, 2]})
    assert (fs_a, fs_b, fs_c) == (tcp_a, tcp_b, tcp_c)


async def published_dataset(scheme: str) -> list[Any]:
    """A client reads, with msgpack only, what another published with pickle."""
    async with Scheduler(protocol=scheme, host="127.0.0.1", dashboard=False) as scheduler, \
            Worker(scheduler.address, nthreads=1), \
            Client(scheduler.address, asynchronous=True) as publisher, \
            Client(scheduler.address, asynchronous=True, serializers=["msgpack"],
                   deserializers=["msgpack"]) as reader:
        await publisher.publish_dataset(half=HALF, numbers=[1, 2])
        out: list[Any] = []
        for name in ("half", "numbers"):
            try:
                out.append(await reader.get_dataset(name))
            except TypeError as exc:
                out.append(outcome(exc))
        # Work still runs for it: what it reads back comes as ToPickle or msgpack.
        out.append(await reader.submit(operator.add, 1, 2))
        return out


def test_msgpack_client_reads_a_pickled_dataset_as_on_tcp() -> None:
    async def both() -> list[Any]:
        return [await published_dataset(scheme) for scheme in SCHEMES]

    tcp, fastser_ = asyncio.run(asyncio.wait_for(both(), 4 * TIMEOUT))
    assert tcp[0] == "TypeError"
    assert fastser_ == tcp


def refuse_to_unpickle() -> None:
    raise ValueError("refused on arrival")


class OpensBadly:
    """Pickles, but unpickling it raises: a payload every reader fails to open."""

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return refuse_to_unpickle, ()


async def failed_gather(scheme: str) -> list[Any]:
    """A result that cannot be opened where it arrives, gathered by the client through the
    scheduler and directly from the worker: what the client is told each time."""
    async with Scheduler(protocol=scheme, host="127.0.0.1", dashboard=False) as scheduler, \
            Worker(scheduler.address, nthreads=1), \
            Client(scheduler.address, asynchronous=True) as client:
        future = client.submit(OpensBadly, pure=False)
        await asyncio.wait_for(client.gather(client.submit(type, future)), TIMEOUT)
        out: list[Any] = []
        for direct in (False, True):
            try:
                await asyncio.wait_for(client.gather(future, direct=direct), TIMEOUT)
                out.append("opened")
            except ValueError as exc:
                out.append(("ValueError", "refused on arrival" in str(exc)))
        return out


def test_a_payload_that_fails_to_open_reaches_the_client_as_an_error_as_on_tcp() -> None:
    async def both() -> list[Any]:
        return [await failed_gather(scheme) for scheme in SCHEMES]

    tcp, fastser_ = asyncio.run(asyncio.wait_for(both(), 4 * TIMEOUT))
    assert tcp == [("ValueError", True)] * 2
    assert fastser_ == tcp

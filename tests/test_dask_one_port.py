# mypy: disallow-untyped-calls=False
# (distributed leaves Scheduler, Worker, Nanny, Client, listen and connect unannotated)
"""One port for both schemes: a fastser:// listener serves tcp:// peers too, told apart by
their first 8 bytes (MAGIC or distributed's length of its handshake), unless
distributed.comm.fastser.accept-tcp is False. Real loopback clusters; every wait has a
timeout, so a bug fails, not hangs."""

import asyncio
import logging
import operator
import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("distributed")

import dask.config  # noqa: E402
import numpy as np  # noqa: E402
from distributed import Client, Nanny, Scheduler, Worker  # noqa: E402
from distributed.comm.core import CommClosedError, connect, listen  # noqa: E402

from fastser.dask.comm import MAGIC  # noqa: E402
from fastser.dask.listener import ACCEPT_TCP_KEY, TCP_GREETING_BYTES, accepts_tcp  # noqa: E402
from test_dask import Records  # noqa: E402
from test_dask_listener import open_connections  # noqa: E402

TIMEOUT = 30.0  # seconds, for anything that waits on the cluster
CONNECT = 1.0  # distributed.comm.timeouts.connect where a test waits for it, seconds


@pytest.fixture
def records() -> Iterator[Records]:
    """What fastser.dask logs at WARNING or above."""
    handler = Records()
    logger = logging.getLogger("fastser.dask")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def as_tcp(address: str) -> str:
    return "tcp://" + address.split("://", 1)[1]


async def tcp_peers_join() -> None:
    async with Scheduler(protocol="fastser://", host="127.0.0.1", port=0,
                         dashboard=False) as scheduler:
        tcp_address = as_tcp(scheduler.address)
        # A tcp:// worker process (as docs/dask.md says, with fastser.dask preloaded to open
        # payloads bridged from fastser://), a tcp:// worker here, a fastser:// worker and a
        # client of each scheme, all on the scheduler's one port.
        async with Nanny(tcp_address, nthreads=1, preload=["fastser.dask"]) as nanny, \
                Worker(tcp_address, nthreads=1) as tcp_worker, \
                Worker(scheduler.address, nthreads=1) as fastser_worker, \
                Client(tcp_address, asynchronous=True) as tcp_client, \
                Client(scheduler.address, asynchronous=True) as fastser_client:
            await tcp_client.wait_for_workers(3, timeout=TIMEOUT)
            registered = sorted(address.split("://")[0]
                                for address in scheduler.workers)
            assert registered == ["fastser", "tcp", "tcp"]
            assert await tcp_client.submit(sum, range(10)) == 45
            assert await fastser_client.submit(sum, range(5)) == 10
            # Worker to worker across the schemes, each fetching from the other's listener.
            a = np.arange(100_000)
            [on_nanny] = await tcp_client.scatter([a], workers=[nanny.worker_address])
            on_fastser = tcp_client.submit(operator.mul, on_nanny, 3,
                                           workers=[fastser_worker.address])
            on_tcp = tcp_client.submit(operator.add, on_nanny, on_fastser,
                                       workers=[tcp_worker.address])
            np.testing.assert_array_equal(await on_tcp, a * 4)
            # Through the scheduler, across the codecs: scattered by a client of each scheme
            # to a worker of the other, gathered back the same way.
            [b] = await tcp_client.scatter([a * 5], workers=[fastser_worker.address])
            [c] = await fastser_client.scatter([a * 7], workers=[nanny.worker_address])
            np.testing.assert_array_equal(await tcp_client.gather(b), a * 5)
            np.testing.assert_array_equal(await fastser_client.gather(c), a * 7)


def test_tcp_clients_and_workers_join_a_fastser_scheduler() -> None:
    asyncio.run(asyncio.wait_for(tcp_peers_join(), 3 * TIMEOUT))


async def refused_when_off() -> float:
    """With ACCEPT_TCP_KEY False: how long a tcp:// Client took to be refused; a fastser://
    client is served."""
    async with Scheduler(protocol="fastser://", host="127.0.0.1", port=0,
                         dashboard=False) as scheduler:
        started = time.perf_counter()
        with pytest.raises(CommClosedError):
            async with Client(as_tcp(scheduler.address), asynchronous=True, timeout=TIMEOUT):
                pass
        refused = time.perf_counter() - started
        async with Worker(scheduler.address, nthreads=1), \
                Client(scheduler.address, asynchronous=True) as client:
            assert await client.submit(sum, range(10)) == 45
        return refused


def test_tcp_peers_are_refused_when_the_key_is_false(records: Records) -> None:
    with dask.config.set({ACCEPT_TCP_KEY: False,
                          "distributed.comm.timeouts.connect": f"{TIMEOUT}s"}):
        refused = asyncio.run(asyncio.wait_for(refused_when_off(), 3 * TIMEOUT))
    # At once, not when the handshake's deadline (or the client's timeout) runs out.
    assert refused < TIMEOUT / 10, refused
    lines = [line for line in records.messages if "tcp://" in line]
    assert len(lines) == 1 and ACCEPT_TCP_KEY in lines[0], records.messages


async def fastser_to_tcp() -> tuple[float, str]:
    async with Scheduler(protocol="tcp://", host="127.0.0.1", port=0,
                         dashboard=False) as scheduler:
        started = time.perf_counter()
        with pytest.raises(CommClosedError) as raised:
            await connect(scheduler.address.replace("tcp://", "fastser://"), timeout=TIMEOUT)
        return time.perf_counter() - started, str(raised.value)


def test_a_fastser_client_of_a_tcp_scheduler_fails_at_once() -> None:
    # A tcp:// listener writes its handshake first: the fastser:// side reads it, not MAGIC.
    # (The tcp:// scheduler logs a MemoryError: its reader takes MAGIC for a length.)
    with dask.config.set({"distributed.comm.timeouts.connect": f"{TIMEOUT}s"}):
        took, error = asyncio.run(asyncio.wait_for(fastser_to_tcp(), 3 * TIMEOUT))
    assert "does not speak fastser" in error
    assert took < TIMEOUT / 10, took


def tcp_length(size: int) -> bytes:
    """distributed's tcp:// framing: a message's first 8 bytes, its length."""
    return struct.pack("Q", size)


def test_neither_kind_stalls_past_the_deadline() -> None:
    # Connections of both kinds that stop before their handshake: none closed before the
    # deadline, all after it. The fastser:// kinds are test_dask_listener.py's.
    sent = [tcp_length(100), tcp_length(100) + b"\x00" * 20, tcp_length(0)[:5]] * 3
    with dask.config.set({"distributed.comm.timeouts.connect": f"{CONNECT}s"}):
        early = asyncio.run(open_connections("fastser", sent, CONNECT / 4))
        late = asyncio.run(open_connections("fastser", sent, 3 * CONNECT))
    assert not any(early)
    assert all(late), late


async def first_message_sizes(first: bytes, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Send `first` to a fastser:// listener as a tcp:// peer would: the sizes distributed's
    tcp:// reader allocated for it."""
    import distributed.comm.tcp as tcp

    sizes: list[int] = []
    original = getattr(tcp, "host_array")  # imported there from distributed.protocol.utils

    def recorded(size: int) -> Any:
        sizes.append(size)
        return original(size)

    monkeypatch.setattr(tcp, "host_array", recorded)

    async def handle(comm: Any) -> None:
        await comm.close()

    async with listen("fastser://127.0.0.1", handle) as listener:
        host, port = listener.contact_address.split("://")[1].rsplit(":", 1)
        loop = asyncio.get_running_loop()
        with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
            sock.setblocking(False)
            await loop.sock_sendall(sock, first)
            while await asyncio.wait_for(loop.sock_recv(sock, 1 << 16), TIMEOUT):
                pass  # the listener's handshake, until it closes
    return sizes


@pytest.mark.parametrize("announced", [TCP_GREETING_BYTES + 1, 2**40])
def test_a_tcp_peer_announcing_more_than_a_handshake_is_refused_unread(
        announced: int, records: Records, monkeypatch: pytest.MonkeyPatch) -> None:
    with dask.config.set({"distributed.comm.timeouts.connect": f"{TIMEOUT}s"}):
        sizes = asyncio.run(first_message_sizes(tcp_length(announced), monkeypatch))
    assert sizes == []
    assert any("speaks neither fastser nor tcp://" in line and str(announced) in line
               for line in records.messages), records.messages


def test_a_handshake_sized_tcp_message_goes_to_distributed_reader(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The control of the test above: what is in bounds reaches distributed's reader (whose
    # handshake then fails: the bytes are not msgpack).
    with dask.config.set({"distributed.comm.timeouts.connect": f"{TIMEOUT}s"}):
        sizes = asyncio.run(first_message_sizes(tcp_length(16) + b"\xc1" * 16, monkeypatch))
    assert sizes == [16]


def test_magic_is_no_tcp_handshake_length() -> None:
    assert struct.unpack("Q", MAGIC)[0] > TCP_GREETING_BYTES
    assert accepts_tcp() is True  # the default

# mypy: disallow-untyped-calls=False
# (distributed leaves listen, connect, Serialize, Serialized and Client unannotated)
"""The fastser:// listener before the handshake: a connection that has not greeted and
shaken hands within distributed.comm.timeouts.connect is closed, one whose first message
fails to decode is closed with one log line, and what such a connection was read into goes
with it, not with the next cyclic collection. Real loopback connections, short timeouts."""

import asyncio
import logging
import socket
import struct
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("distributed")

import dask.config  # noqa: E402
from distributed.comm.core import connect, listen  # noqa: E402

from fastser.dask.comm import MAGIC  # noqa: E402

TIMEOUT = 30.0
CONNECT = 1.0  # distributed.comm.timeouts.connect in these tests, seconds
SIZE = 4_000_000  # the frame a hostile first message announces
# A prelude of one frame of SIZE bytes, and a header frame that is not msgpack (0xc1 is a
# byte msgpack never uses).
PRELUDE = struct.pack("<QQ", 1, SIZE)
BAD_HEADER = MAGIC + PRELUDE + b"\xc1" * SIZE
STALLS = [b"", MAGIC[:3], MAGIC, MAGIC + PRELUDE, MAGIC + PRELUDE + bytes(1000)]


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def records() -> Iterator[Records]:
    """Every record logged at INFO or above (distributed's loggers do not propagate)."""
    handler = Records()
    loggers = [logging.getLogger(name) for name in ("", "distributed", "tornado", "asyncio")]
    added = [logger for logger in loggers if logger is loggers[0] or not logger.propagate]
    levels = [logger.level for logger in added]
    for logger in added:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        for logger, level in zip(added, levels):
            logger.removeHandler(handler)
            logger.setLevel(level)


def closed_by_peer(sock: socket.socket) -> bool:
    """Whether the other end has closed `sock` (what it sent before is skipped)."""
    sock.setblocking(False)
    try:
        while sock.recv(1 << 20):
            pass
    except BlockingIOError:
        return False
    except OSError:
        return True
    return True


async def open_connections(scheme: str, sent: list[bytes], wait: float) -> list[bool]:
    """One raw connection per item of `sent` to a listener of `scheme`, each sending it and
    then nothing: which the listener has closed after `wait` seconds."""
    async def handle(comm: Any) -> None:
        await comm.close()

    async with listen(f"{scheme}://127.0.0.1", handle) as listener:
        host, port = listener.contact_address.split("://")[1].rsplit(":", 1)
        loop = asyncio.get_running_loop()
        socks = [socket.create_connection((host, int(port)), timeout=TIMEOUT) for _ in sent]
        try:
            for sock, data in zip(socks, sent):
                sock.setblocking(False)
                await loop.sock_sendall(sock, data)
            await asyncio.sleep(wait)
            return [closed_by_peer(sock) for sock in socks]
        finally:
            for sock in socks:
                sock.close()


def test_stalled_connections_are_closed_after_the_connect_timeout() -> None:
    sent = STALLS * 4
    with dask.config.set({"distributed.comm.timeouts.connect": f"{CONNECT}s"}):
        early = asyncio.run(open_connections("fastser", sent, CONNECT / 4))
        late = asyncio.run(open_connections("fastser", sent, 3 * CONNECT))
    assert not any(early)  # before the deadline, nothing is closed
    assert all(late), late


async def handshake_then_wait() -> Any:
    """A connection whose handshake completed is not closed by the deadline."""
    received: asyncio.Queue[Any] = asyncio.Queue()

    async def handle(comm: Any) -> None:
        await received.put(await comm.read())
        await comm.write("ok")

    async with listen("fastser://127.0.0.1", handle) as listener:
        comm = await connect(listener.contact_address, timeout=TIMEOUT)
        await asyncio.sleep(3 * CONNECT)
        await comm.write({"op": "late"})
        answer = await comm.read()
        await comm.close()
        return await received.get(), answer


def test_a_connection_past_its_handshake_outlives_the_deadline() -> None:
    with dask.config.set({"distributed.comm.timeouts.connect": f"{CONNECT}s"}):
        assert asyncio.run(asyncio.wait_for(handshake_then_wait(), TIMEOUT)) == (
            {"op": "late"}, "ok")


@pytest.mark.parametrize("first", [BAD_HEADER, MAGIC + struct.pack("<QQ", 1, 1) + b"\x05"],
                         ids=["undecodable", "not-a-dict"])
def test_a_bad_first_message_closes_the_connection_with_one_log_line(
        first: bytes, records: Records) -> None:
    with dask.config.set({"distributed.comm.timeouts.connect": f"{TIMEOUT}s"}):
        closed = asyncio.run(open_connections("fastser", [first], CONNECT))
    assert closed == [True]
    lines = [record.getMessage() for record in records.records]
    assert len(lines) == 1, lines
    assert "handshake failed" in lines[0] and records.records[0].exc_info is None


# Run in a subprocess with the cyclic collector off: what N connections closed after a bad
# first message still hold, by tracemalloc, next to one message's size.
HELD = textwrap.dedent("""
    import asyncio, gc, socket, sys, tracemalloc
    import dask.config
    from distributed.comm.core import listen
    scheme, size, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    first = bytes.fromhex(sys.argv[4]) + bytes([0xc1]) * size

    async def main():
        async def handle(comm):
            await comm.close()
        async with listen(scheme + "://127.0.0.1", handle) as listener:
            host, port = listener.contact_address.split("://")[1].rsplit(":", 1)
            loop = asyncio.get_running_loop()
            gc.collect()
            gc.disable()
            tracemalloc.start()
            socks = []
            for _ in range(count):
                sock = socket.create_connection((host, int(port)))
                sock.setblocking(False)
                await loop.sock_sendall(sock, first)
                socks.append(sock)
            for _ in range(200):  # until the listener has closed them all
                await asyncio.sleep(0.05)
                closed = 0
                for sock in socks:
                    try:
                        closed += sock.recv(1 << 20) == b""
                    except BlockingIOError:
                        pass
                    except OSError:
                        closed += 1
                if closed == count:
                    break
            await asyncio.sleep(0.2)
            print(tracemalloc.get_traced_memory()[0])
    asyncio.run(main())
""")


def test_a_closed_connection_holds_no_buffer_until_a_cyclic_collection() -> None:
    count = 4
    done = subprocess.run(
        [sys.executable, "-c", "import fastser.dask\n" + HELD, "fastser", str(SIZE),
         str(count), (MAGIC + PRELUDE).hex()],
        capture_output=True, text=True, timeout=4 * TIMEOUT)
    assert done.returncode == 0, done.stderr[-2000:]
    held = int(done.stdout.split()[-1])
    # Each connection read SIZE bytes: none of them may be left.
    assert held < SIZE // 2, (held, SIZE)

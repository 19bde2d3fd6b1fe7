"""What a connection costs the receiving process when its peer announces a large message and
then stalls: memory grows only with the bytes received, so a fastser:// connection costs about
what a tcp:// one does (whose reader also reserves, but does not touch, what is announced).
Each scheme is measured in a subprocess of its own, by resident memory (RSS)."""

import asyncio
import json
import os
import socket
import struct
import subprocess
import sys
from typing import Any

import pytest

GiB = 2**30
CONNECTIONS = 40
# How much more than a tcp:// one a stalled fastser:// connection may cost: its comm, its
# reader and the page the bytes that came were written to (its handshake's Encoder takes
# msgpack Packers from a pool all Encoders share). tcp:// measures ~12 KiB here and
# fastser:// ~14 KiB; a reader that committed a read's span (1 MiB) ahead of the bytes would
# cost ~1.1 MiB, and a Packer pair per connection ~70 KiB.
ALLOWED_EXTRA_BYTES = 32 * 2**10


def stall_bytes(scheme: str) -> bytes:
    """What a peer sends before it stalls: a greeting, a prelude announcing a header of 100
    bytes and a frame of 1 GiB, the header and 60 bytes of that frame (fastser://);
    distributed's length of 1 GiB (tcp://, whose reader allocates it at once), then 160
    bytes."""
    if scheme == "fastser":
        from fastser.dask.comm import MAGIC
        return MAGIC + struct.pack("<3Q", 2, 100, GiB) + b"h" * 160
    return struct.pack("<Q", GiB) + b"h" * 160


def rss() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


async def measure(scheme: str, connections: int) -> dict[str, Any]:
    """RSS growth of this process, a listener of `scheme`, per stalled connection."""
    import fastser.dask  # noqa: F401  (registers the fastser:// backend)
    from distributed.comm.core import listen

    async def handle(comm: Any) -> None:
        await comm.read()

    # distributed is not annotated.
    async with listen(f"{scheme}://127.0.0.1:0", handle) as listener:  # type: ignore[no-untyped-call]
        host, port = listener.listen_address.split("://")[1].rsplit(":", 1)
        data = stall_bytes(scheme)

        async def stall(count: int) -> list[socket.socket]:
            socks = []
            for _ in range(count):
                sock = socket.create_connection((host, int(port)))
                sock.sendall(data)
                socks.append(sock)
            await asyncio.sleep(1.0)  # the listener accepts, greets and reads what came
            return socks

        warm = await stall(4)  # imports, first-use caches
        before = rss()
        socks = await stall(connections)
        after = rss()
        for sock in socks + warm:
            sock.close()
    return {"scheme": scheme, "per_connection": (after - before) / connections}


def run_measure(scheme: str) -> float:
    out = subprocess.run([sys.executable, __file__, scheme, str(CONNECTIONS)],
                         capture_output=True, text=True, timeout=120, env=os.environ.copy())
    assert out.returncode == 0, out.stderr
    result: float = json.loads(out.stdout.strip().splitlines()[-1])["per_connection"]
    return result


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc")
def test_a_stalled_connection_costs_what_a_tcp_one_does() -> None:
    pytest.importorskip("distributed")
    tcp = run_measure("tcp")
    fastser = run_measure("fastser")
    assert fastser <= tcp + ALLOWED_EXTRA_BYTES, \
        f"per stalled connection: fastser:// {fastser:.0f} bytes, tcp:// {tcp:.0f}"


if __name__ == "__main__":
    print(json.dumps(asyncio.run(measure(sys.argv[1], int(sys.argv[2])))))

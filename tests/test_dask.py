"""fastser.dask: the fastser:// comm backends in a real LocalCluster (worker processes),
hostile peers on a fastser:// port, the handshake and mixed schemes (the bridge has its own
tests, test_dask_bridge.py). Skipped without distributed (the dask extra). Every wait has a
timeout, so a bug fails, not hangs."""

import asyncio
import contextlib
import datetime
import importlib
import importlib.metadata
import logging
import mmap
import operator
import pathlib
import shutil
import socket
import struct
import subprocess
from collections.abc import AsyncIterator, Iterator
from typing import Any, Optional

import pytest

pytest.importorskip("distributed")

import dask.array as da  # noqa: E402
import dask.config  # noqa: E402
import numpy as np  # noqa: E402
from distributed import Client, LocalCluster, Nanny, Scheduler, Worker, wait  # noqa: E402
from distributed.security import Security  # noqa: E402
from distributed.comm.core import connect  # noqa: E402
from distributed.comm.core import CommClosedError  # noqa: E402
from distributed.protocol.serialize import Serialize as DSerialize  # noqa: E402

import fastser  # noqa: E402
from fastser import Decoder, Encoder, LinkRate  # noqa: E402
from fastser.codec.wire import WIRE_VERSION
from fastser.transport.receive_buffer import MMAP_BYTES, READ_BYTES, populate, receive_buffer
from fastser.dask import FastserBackend, FastserTLSBackend  # noqa: E402
from fastser.dask.codecs import (COMPRESSION_KEY, PEER_READS_KEY, READS_KEY,  # noqa: E402
                                 make_encoder, peer_reads)
from fastser.dask.comm import MAGIC, WIRE_KEY, FastserComm  # noqa: E402
from streams import owner_of  # noqa: E402

TIMEOUT = 30.0  # seconds, for anything that waits on the cluster

# Installed in every process of the cluster (the workers get it as a preload, the test
# process runs it): counts calls of distributed's message codec and of fastser's comm.
PROBE = '''
import distributed.protocol as probed_protocol
import fastser.dask.comm as probed_dask


def install():
    counts = {"dumps": 0, "loads": 0, "reads": 0, "writes": 0}
    originals = (probed_protocol.dumps, probed_protocol.loads,
                 probed_dask.FastserComm.read, probed_dask.FastserComm.write)

    def counted(name, function):
        def call(*args, **kwargs):
            counts[name] += 1
            return function(*args, **kwargs)
        return call

    async def counted_read(self, *args, **kwargs):
        counts["reads"] += 1
        return await originals[2](self, *args, **kwargs)

    async def counted_write(self, *args, **kwargs):
        counts["writes"] += 1
        return await originals[3](self, *args, **kwargs)

    probed_protocol.dumps = counted("dumps", originals[0])
    probed_protocol.loads = counted("loads", originals[1])
    probed_dask.FastserComm.read = counted_read
    probed_dask.FastserComm.write = counted_write
    probed_protocol.fastser_probe = counts
    probed_protocol.fastser_probe_originals = originals


# distributed may import (and reload) a preload more than once: install once.
if not hasattr(probed_protocol, "fastser_probe"):
    install()
'''
# What a worker evaluates to report its counts (client.run ships the builtin eval by name).
READ_PROBE = "__import__('distributed').protocol.fastser_probe"


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture(scope="module")
def probe() -> Iterator[dict[str, int]]:
    # getattr/setattr: the names PROBE adds are unknown to the type checker.
    import distributed.protocol as protocol
    exec(PROBE, {})
    try:
        yield getattr(protocol, "fastser_probe")
    finally:
        originals = getattr(protocol, "fastser_probe_originals")
        for owner, name, original in zip((protocol, protocol, FastserComm, FastserComm),
                                         ("dumps", "loads", "read", "write"), originals):
            setattr(owner, name, original)
        delattr(protocol, "fastser_probe")
        delattr(protocol, "fastser_probe_originals")


@pytest.fixture(scope="module")
def client(probe: dict[str, int]) -> Iterator[Client]:
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      protocol="fastser://", host="127.0.0.1", dashboard_address=":0",
                      preload=[PROBE]) as cluster, Client(cluster) as client:
        client.wait_for_workers(2, timeout=TIMEOUT)
        yield client


@pytest.fixture(scope="module")
def workers(client: Client) -> list[str]:
    return sorted(client.scheduler_info()["workers"])


def test_backends_are_entry_points() -> None:
    found = {entry.name: entry.load()
             for entry in importlib.metadata.entry_points(group="distributed.comm.backends")}
    assert found["fastser"] is FastserBackend
    assert found["fastser-tls"] is FastserTLSBackend


def test_array_moves_worker_to_worker(client: Client, workers: list[str]) -> None:
    a, b = workers
    x = client.submit(np.arange, 1_000_000, workers=[a])
    total = client.submit(np.sum, x, workers=[b])
    assert total.result(timeout=TIMEOUT) == 499_999_500_000
    # x was computed on a and fetched by b (lists arrive as tuples, as on tcp://).
    assert client.who_has(total)[total.key] == (b,)
    assert sorted(client.who_has(x)[x.key]) == [a, b]
    moved = client.submit(operator.mul, x, 2, workers=[b], pure=False)
    np.testing.assert_array_equal(moved.result(timeout=TIMEOUT), np.arange(1_000_000) * 2)


def odd_bytes_then_array() -> tuple[bytes, Any]:
    return b"o" * 65_537, np.arange(100_000, dtype=np.float64)  # the array after 65,537 bytes


def array_is_aligned(pair: tuple[bytes, Any]) -> bool:
    return bool(pair[1].flags.aligned) and pair[1].ctypes.data % 16 == 0


def test_arrays_arrive_aligned_after_an_odd_frame(client: Client, workers: list[str]) -> None:
    a, b = workers
    pair = client.submit(odd_bytes_then_array, workers=[a], pure=False)
    assert client.submit(array_is_aligned, pair, workers=[b]).result(timeout=TIMEOUT)
    assert array_is_aligned(pair.result(timeout=TIMEOUT))


@pytest.mark.parametrize("direct", [False, True])
def test_gather(client: Client, direct: bool) -> None:
    futures = client.map(operator.neg, range(50), key=[f"neg-{direct}-{i}" for i in range(50)])
    assert client.gather(futures, direct=direct) == [-i for i in range(50)]


def test_scatter_bytes(client: Client) -> None:
    data = bytes(range(256)) * 1000  # 256,000 bytes: a frame of its own
    [future] = client.scatter([data])
    assert client.submit(len, future).result(timeout=TIMEOUT) == len(data)
    assert future.result(timeout=TIMEOUT) == data


def test_map_of_200_tasks(client: Client) -> None:
    futures = client.map(operator.add, range(200), [7] * 200)
    assert client.gather(futures) == [i + 7 for i in range(200)]


def test_dask_array_reduction(client: Client) -> None:
    x = da.ones((2000, 2000), chunks=(500, 500))
    assert client.compute(x.sum()).result(timeout=TIMEOUT) == 4_000_000
    assert client.compute((x + x.T).mean(axis=0)).result(timeout=TIMEOUT).tolist() == \
        [2.0] * 2000


def test_large_message_is_opened_off_the_event_loop(client: Client,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import fastser.dask.comm
    opened: list[Any] = []

    def counted(function: Any, *args: Any) -> Any:
        opened.append(function)
        return offload(function, *args)

    offload = getattr(fastser.dask.comm, "offload")  # distributed.utils.offload, as imported there
    monkeypatch.setattr(fastser.dask.comm, "offload", counted)
    big = client.submit(np.ones, 3 * 2**20, pure=False)  # 24 MiB, above distributed's 10 MiB
    assert client.gather(big).sum() == 3 * 2**20
    assert client.gather(client.submit(operator.neg, 1, pure=False)) == -1
    assert len(opened) == 1  # the large result only, read by this (the client's) process


def test_task_exception_reaches_the_client(client: Client) -> None:
    with pytest.raises(ZeroDivisionError):
        client.submit(operator.truediv, 1, 0).result(timeout=TIMEOUT)


def hostile(address: str, data: bytes) -> bytes:
    """Connect to a fastser:// address, send `data`, return all bytes until the peer
    closes the connection (within TIMEOUT)."""
    host, port = address.removeprefix("fastser://").rsplit(":", 1)
    received = b""
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
        sock.sendall(data)
        while chunk := sock.recv(65536):
            received += chunk
    return received


@pytest.mark.parametrize("data, reason, announced", [
    (b"GET / HTTP/1.1\r\nHost: scheduler\r\n\r\n", "speaks neither fastser nor tcp://",
     None),
    (MAGIC + struct.pack("<2Q", 1, 2**62), "Limits.max_frame_bytes", 2**62),
    (MAGIC + struct.pack("<Q", 2**62), "not a fastser stream", None),
    (MAGIC + struct.pack("<Q", 2**31), "Limits.max_frames", None),
    (MAGIC + struct.pack("<Q", 2000) + bytes(8 * 2000), "more than the 1274 it may hold", 0),
])
def test_hostile_peer_is_refused_before_allocation(client: Client, data: bytes, reason: str,
                                                   announced: Optional[int],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # The scheduler runs in this process: the buffers its comms allocate are seen here.
    sizes: list[int] = []

    def recorded(size: int) -> memoryview:
        sizes.append(size)
        return receive_buffer(size)

    monkeypatch.setattr(fastser.dask.comm, "receive_buffer", recorded)
    records = Records()
    logging.getLogger("fastser.dask").addHandler(records)
    try:
        greeting = hostile(client.scheduler_info()["address"], data)
    finally:
        logging.getLogger("fastser.dask").removeHandler(records)
    if announced is not None:
        assert announced not in sizes, sizes
    # The scheduler greeted a fastser peer (nothing else: it writes only after the peer's
    # first bytes), then closed the connection, saying why: the limit refused the prelude
    # before the buffer it announces was allocated.
    assert greeting == b"" if data.startswith(b"GET") else greeting.startswith(MAGIC)
    assert any(reason in message for message in records.messages), records.messages
    assert client.submit(operator.add, 1, 2, pure=False).result(timeout=TIMEOUT) == 3


def test_distributed_codec_never_called(client: Client, probe: dict[str, int]) -> None:
    # Runs after the tests above (file order): the whole cluster's traffic so far.
    assert client.submit(operator.neg, 5).result(timeout=TIMEOUT) == -5
    counts = {"test process": dict(probe)}
    counts.update(client.run(eval, READ_PROBE))
    assert len(counts) == 3
    for where, count in counts.items():
        assert count["dumps"] == 0 and count["loads"] == 0, (where, count)
        assert count["reads"] > 10 and count["writes"] > 10, (where, count)


ALL_READ = {PEER_READS_KEY: ["lz4", "zstd", "zlib"]}


def compressed_with(encoder: Encoder) -> Any:
    """What the encoder compresses a compressible array's frame with (None: nothing)."""
    msg = {"data": DSerialize(np.zeros(100_000)), "op": "x"}
    frames = encoder.dumps(msg)
    np.testing.assert_array_equal(Decoder().loads(frames)["data"], np.zeros(100_000))
    header = fastser.loads(frames, deserialize=False)["data"].header
    return header.get("compression", [None])[0]


@pytest.mark.parametrize("agreed, used", [
    ("lz4", "lz4"), ("zstd", "zstd"), ("zlib", "zlib"), ("snappy", "lz4"), (None, "lz4")])
def test_compression_agreed_in_the_handshake(agreed: Any, used: Any) -> None:
    # distributed.comm.compression, where it names a compressor, is used as tcp:// would;
    # otherwise fastser://'s default, "adaptive", with lz4 while the link is unmeasured.
    pytest.importorskip("lz4")
    pytest.importorskip("zstandard")
    assert compressed_with(make_encoder(None, "message", {"compression": agreed, **ALL_READ},
                                        2**26)) == used


@pytest.mark.parametrize("reads, setting, used", [
    ([], "adaptive", None), (["zstd"], "adaptive", "zstd"), (["lz4"], "zstd", None),
    (["lz4", "zstd"], "zstd", "zstd"), (["lz4", "zstd"], "none", None),
    (["lz4", "zstd"], False, None), (["zlib"], "zlib", "zlib"), ("lz4", "adaptive", None),
    ([["zstd"], {"zstd": 1}, 7, None], "adaptive", None),
    ([f"junk{i}" for i in range(100_000)] + ["zstd"], "adaptive", "zstd")])
def test_a_peer_is_sent_only_what_it_reads(reads: Any, setting: Any, used: Any) -> None:
    pytest.importorskip("lz4")
    pytest.importorskip("zstandard")
    remote = {READS_KEY: reads}
    context = {PEER_READS_KEY: FastserComm.handshake_configuration(
        {**HANDSHAKE, READS_KEY: ["lz4"]}, {**HANDSHAKE, **remote})[PEER_READS_KEY]}
    with dask.config.set({COMPRESSION_KEY: setting}):
        assert compressed_with(make_encoder(None, "message", context, 2**26)) == used


def test_a_peers_list_of_reads_keeps_only_known_names() -> None:
    reads = peer_reads({READS_KEY: ["zstd", "snappy", "lz4", "zstd", 5] * 10_000})
    assert reads == ["lz4", "zstd"]
    assert peer_reads({READS_KEY: "lz4"}) == [] and peer_reads({}) == []


def test_a_bad_compression_setting_is_named() -> None:
    with dask.config.set({COMPRESSION_KEY: "snappy"}):
        with pytest.raises(ValueError, match="distributed.comm.fastser.compression is 'snappy'"):
            make_encoder(None, "message", ALL_READ, 2**26)


def test_adaptive_compression_never_for_a_peer_on_the_same_host() -> None:
    pytest.importorskip("lz4")
    slow = LinkRate()
    slow.sent(10**6, 1.0)
    assert compressed_with(make_encoder(None, "message", ALL_READ, 2**26, slow,
                                        same_host=True)) is None
    with dask.config.set({COMPRESSION_KEY: "lz4"}):  # asked for by name: as asked
        assert compressed_with(make_encoder(None, "message", ALL_READ, 2**26, slow,
                                            same_host=True)) == "lz4"


def test_adaptive_compression_follows_the_peer_hosts_link() -> None:
    pytest.importorskip("lz4")
    link = LinkRate()
    link.sent(10**11, 1.0)  # 100 GB/s: faster than any compressor
    assert compressed_with(make_encoder(None, "message", ALL_READ, 2**26, link)) is None
    slow = LinkRate()
    slow.sent(10**6, 1.0)
    assert compressed_with(make_encoder(None, "message", ALL_READ, 2**26, slow)) is not None


HANDSHAKE = {"compression": None, "pickle-protocol": 5, WIRE_KEY: WIRE_VERSION}


def test_serializers_and_on_error_of_write() -> None:
    # Comm.write(serializers=["msgpack"]): payloads msgpack cannot take fail as "error"
    # records (on_error="message"), while other objects are still pickled, as distributed does.
    encoder = make_encoder(["msgpack"], "message", {}, 2**26)
    frames = encoder.dumps({"ok": DSerialize([1, 2]), "bad": DSerialize(np.arange(3)),
                            "cls": logging.Formatter})
    with pytest.raises(fastser.DeserializationError, match="could not serialize"):
        Decoder().loads(frames)
    kept = Decoder(deserialize=False, open_pickled=True).loads(frames)
    assert kept["ok"].header["serializer"] == "msgpack"
    assert kept["cls"] is logging.Formatter
    with pytest.raises(fastser.SerializationError):
        make_encoder(["msgpack"], "raise", {}, 2**26).dumps({"bad": DSerialize(np.arange(3))})


def test_handshake_requires_the_same_wire_version() -> None:
    ours = {"compression": None, "pickle-protocol": 5, WIRE_KEY: WIRE_VERSION}
    assert FastserComm.handshake_configuration(ours, dict(ours))[WIRE_KEY] == WIRE_VERSION
    with pytest.raises(ValueError, match="wire version 2"):
        FastserComm.handshake_configuration(ours, {**ours, WIRE_KEY: 2})
    with pytest.raises(ValueError, match="wire version None"):
        FastserComm.handshake_configuration(ours, {"compression": None, "pickle-protocol": 5})


async def mixed_cluster() -> None:
    # Lists of protocols and ports work, though distributed annotates one of each.
    listen: dict[str, Any] = {"protocol": ["tcp://", "fastser://"], "port": [0, 0]}
    async with Scheduler(**listen, host="127.0.0.1", dashboard=False) as scheduler:
        tcp_address, fastser_address = (listener.contact_address
                                        for listener in scheduler.listeners)
        assert tcp_address.startswith("tcp://") and fastser_address.startswith("fastser://")
        # A worker process on tcp:// with the preload of docs/dask.md, one on fastser://.
        async with Nanny(tcp_address, nthreads=1, preload=["fastser.dask"]) as tcp_worker, \
                Worker(fastser_address, nthreads=1) as fastser_worker, \
                Client(fastser_address, asynchronous=True) as fastser_client, \
                Client(tcp_address, asynchronous=True) as tcp_client:
            a = np.arange(100_000)
            b = np.arange(100_000) * 3
            # Each payload crosses the codecs twice, through the scheduler: scattered from
            # one scheme to a worker on the other, gathered back the same way.
            [on_tcp] = await fastser_client.scatter([a], workers=[tcp_worker.worker_address])
            [on_fastser] = await tcp_client.scatter([b], workers=[fastser_worker.address])
            np.testing.assert_array_equal(await fastser_client.gather(on_tcp), a)
            np.testing.assert_array_equal(await tcp_client.gather(on_fastser), b)
            # Worker to worker, each fetching from the other's listener.
            tripled = fastser_client.submit(operator.mul, on_tcp, 3,
                                            workers=[fastser_worker.address])
            total = fastser_client.submit(operator.add, on_tcp, tripled,
                                          workers=[tcp_worker.worker_address])
            np.testing.assert_array_equal(await total, a * 4)
            # The wrong scheme on either port fails at once, with a clear message.
            with pytest.raises(CommClosedError, match="does not speak fastser"):
                await connect(tcp_address.replace("tcp://", "fastser://"), timeout=TIMEOUT)
            # A tcp:// peer on the fastser:// port is served there too
            # (test_dask_one_port.py).
            comm = await connect(fastser_address.replace("fastser://", "tcp://"),
                                 timeout=TIMEOUT)
            assert comm.peer_address.startswith("tcp://")
            await comm.close()


def test_mixed_schemes() -> None:
    asyncio.run(asyncio.wait_for(mixed_cluster(), 3 * TIMEOUT))


async def tls_cluster(security: Any) -> None:
    async with Scheduler(protocol="fastser-tls://", host="127.0.0.1", dashboard=False,
                         security=security) as scheduler:
        address = scheduler.address
        assert address.startswith("fastser-tls://")
        async with Worker(address, nthreads=1, security=security) as worker, \
                Client(address, security=security, asynchronous=True) as client:
            assert worker.address.startswith("fastser-tls://")
            x = client.submit(np.arange, 100_000, pure=False)
            np.testing.assert_array_equal(await client.submit(operator.mul, x, 2),
                                          np.arange(100_000) * 2)
            # A tls:// client on the same port (test_dask_one_port.py has tcp://).
            async with Client(address.replace("fastser-tls://", "tls://"), security=security,
                              asynchronous=True) as tls_client:
                assert await tls_client.submit(sum, range(10)) == 45
            # require-encryption refuses fastser:// (unencrypted) and accepts fastser-tls://.
            with pytest.raises(RuntimeError, match="encryption required"):
                await connect(address.replace("fastser-tls://", "fastser://"),
                              **security.get_connection_args("client"))


def self_signed(key: pathlib.Path, cert: pathlib.Path) -> None:
    """A key and a self-signed certificate for localhost, made with the `cryptography`
    package (the test extra installs it), else with the openssl command."""
    try:
        # Imported by name: mypy then needs no stubs where the package is missing.
        x509: Any = importlib.import_module("cryptography.x509")
        hashes: Any = importlib.import_module("cryptography.hazmat.primitives.hashes")
        rsa: Any = importlib.import_module("cryptography.hazmat.primitives.asymmetric.rsa")
        encoding: Any = importlib.import_module("cryptography.hazmat.primitives.serialization")
    except ImportError:
        openssl = shutil.which("openssl")
        if openssl is None:
            pytest.skip("needs the cryptography package or openssl to make a certificate")
        subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)],
                       check=True, capture_output=True, timeout=TIMEOUT)
        return
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    signed = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
              .public_key(private.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - datetime.timedelta(minutes=5))
              .not_valid_after(now + datetime.timedelta(days=1))
              .sign(private, hashes.SHA256()))
    key.write_bytes(private.private_bytes(encoding.Encoding.PEM,
                                          encoding.PrivateFormat.TraditionalOpenSSL,
                                          encoding.NoEncryption()))
    cert.write_bytes(signed.public_bytes(encoding.Encoding.PEM))


def test_fastser_tls(tmp_path: pathlib.Path) -> None:
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    self_signed(key, cert)
    files = {f"tls_{role}_{kind}": str(path) for role in ("scheduler", "worker", "client")
             for kind, path in (("key", key), ("cert", cert))}
    security = Security(tls_ca_file=str(cert), require_encryption=True, **files)
    asyncio.run(asyncio.wait_for(tls_cluster(security), 3 * TIMEOUT))


async def refusals_cluster() -> None:
    async with Scheduler(protocol="fastser://", host="127.0.0.1", dashboard=False) as scheduler:
        # Bound to all interfaces, as `dask worker ADDRESS` is: it advertises the interface
        # that routes to its scheduler (distributed does this for tcp:// only).
        async with Worker(scheduler.address, nthreads=1) as worker:
            assert worker.address.startswith("fastser://127.0.0.1:")
            async with Client(scheduler.address, asynchronous=True,
                              deserializers=["msgpack"]) as client:
                # A payload the reader may not open raises TypeError, as on tcp:// (here
                # the sender, told msgpack only, sends an "error" payload instead).
                future = await client.scatter(np.ones(5))
                with pytest.raises(TypeError, match="ndarray"):
                    await future
            async with Client(scheduler.address, asynchronous=True,
                              serializers=["dask", "msgpack"]) as client:
                # What the worker cannot send without pickle arrives as an "error" payload,
                # read whatever the deserializers, and raised as TypeError.
                result = client.submit(lambda: logging.Formatter, pure=False)
                await wait(result)
                with pytest.raises(TypeError, match="could not serialize"):
                    await client.gather(result, direct=True)


def test_refusals_and_error_payloads_raise_type_error() -> None:
    asyncio.run(asyncio.wait_for(refusals_cluster(), 3 * TIMEOUT))


class EndsEarly:
    """Unpickles by raising EOFError, as a truncated pickle does."""

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return eof, ()


def eof() -> None:
    raise EOFError


@contextlib.asynccontextmanager
async def comm_pair() -> AsyncIterator[tuple[Any, Any]]:
    """Two ends of one fastser:// connection in this process: (connecting, accepted)."""
    received: asyncio.Queue[Any] = asyncio.Queue()

    async def handle(comm: Any) -> None:
        await received.put(comm)

    from distributed.comm.core import listen
    async with listen("fastser://127.0.0.1", handle) as listener:
        comm = await connect(listener.contact_address, timeout=TIMEOUT)
        other = await received.get()
        try:
            yield comm, other
        finally:
            await comm.close()
            await other.close()


async def truncated_payload() -> None:
    async with comm_pair() as (comm, other):
        await other.write({"data": DSerialize(EndsEarly())})
        # As on tcp://: EOFError while opening a payload closes the comm.
        with pytest.raises(CommClosedError, match="truncated"):
            await comm.read()
        assert comm.closed()


def test_eof_in_a_payload_closes_the_comm() -> None:
    asyncio.run(asyncio.wait_for(truncated_payload(), TIMEOUT))


SHARD = 3 * 2**20  # the sender's split size in the test below, above READ_BYTES (1 MiB)


def sent_payloads() -> dict[str, Any]:
    return {"odd": b"o" * 65_537,  # an odd-sized frame: the next one starts after a gap
            "medium": np.arange(100_000, dtype=np.float64),  # 800 KB
            "split": np.arange(875_000, dtype=np.float64),  # 7 MB: 3 MiB, 3 MiB, 708,544 B
            "again": np.arange(150_000, dtype=np.float64) + 1}  # 1.2 MB


async def payloads_over_a_comm(sent: dict[str, Any]) -> dict[str, Any]:
    """`sent` across one fastser:// comm, split at SHARD: its arrays as distributed's
    Serialize, its "odd" bytes as they are."""
    async with comm_pair() as (comm, other):
        other.max_shard_size = SHARD
        await other.write({key: DSerialize(value) if key != "odd" else value
                           for key, value in sent.items()})
        msg: dict[str, Any] = await comm.read()
    return msg


def test_a_message_arrives_in_one_buffer_and_split_payloads_join_in_place() -> None:
    # The frames the sender writes: the header, then one per payload but the split one's 3.
    sent = make_encoder(None, "message", {}, SHARD).dumps(
        {key: DSerialize(value) if key != "odd" else value
         for key, value in sent_payloads().items()})
    assert [memoryview(frame).nbytes for frame in sent[1:]] == [
        65_537, 800_000, SHARD, SHARD, 7_000_000 - 2 * SHARD, 1_200_000]
    msg = asyncio.run(asyncio.wait_for(payloads_over_a_comm(sent_payloads()), TIMEOUT))
    assert msg["odd"] == b"o" * 65_537
    arrays = {key: value for key, value in sent_payloads().items() if key != "odd"}
    for key, array in arrays.items():
        np.testing.assert_array_equal(msg[key], array)
        assert msg[key].flags.writeable and msg[key].flags.aligned
        assert msg[key].ctypes.data % 16 == 0
    # One buffer from numpy.empty (numpy is loaded), each frame read into its place in
    # pieces of up to READ_BYTES: the split array's pieces lie end to end in it and were
    # joined there without a copy (a copy would be a bytearray of its own).
    owners = {id(owner_of(msg[key])) for key in arrays}
    assert len(owners) == 1
    owner = owner_of(msg["split"])
    assert type(owner) is np.ndarray
    assert owner.nbytes < sum(memoryview(frame).nbytes for frame in sent) + 4096


def test_a_large_message_arrives_in_private_memory_populated_as_it_is_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # From MMAP_BYTES on, the one buffer is an mmap whose pages are faulted in a read's
    # span at a time, just before the read: spans start unaligned after the odd frame,
    # and the split array's pieces are read 1 MiB at a time into their places.
    spans: list[tuple[int, int]] = []

    def recorded(view: memoryview, start: int, stop: int) -> None:
        spans.append((start, stop))
        populate(view, start, stop)

    monkeypatch.setattr(fastser.dask.comm, "populate", recorded)
    big = np.arange(MMAP_BYTES // 8 + 100_003, dtype=np.float64)
    after = np.arange(300_001, dtype=np.int64) - 7
    sent = {"odd": b"o" * 65_537, "big": big, "after": after}
    msg = asyncio.run(asyncio.wait_for(payloads_over_a_comm(sent), TIMEOUT))
    assert msg["odd"] == b"o" * 65_537
    np.testing.assert_array_equal(msg["big"], big)
    np.testing.assert_array_equal(msg["after"], after)
    owner = owner_of(msg["big"])
    assert type(owner) is mmap.mmap
    assert owner_of(msg["after"]) is owner
    assert all(0 < stop - start <= READ_BYTES for start, stop in spans)
    populated = sum(stop - start for start, stop in spans)
    payload_bytes = 65_537 + big.nbytes + after.nbytes
    # Every frame but the first read's span (populated only as far as bytes have arrived,
    # so a stalled peer commits nothing ahead), nothing twice.
    assert payload_bytes - READ_BYTES <= populated < payload_bytes + 4096


def test_lists_arrive_as_tuples_as_on_tcp() -> None:
    # distributed relies on it: ForwardOutput's print events must carry a tuple of args.
    from fastser.dask.codecs import make_decoder, make_encoder
    frames = make_encoder(None, "message", {}, 2**26).dumps(
        {"op": "log-event", "msg": {"args": ["foo", "\n"]}, "keys": [("x", 1), []],
         "data": DSerialize([1, [2]])})
    for deserialize in (True, False):
        out = make_decoder(deserialize, None).loads(frames)
        assert out["msg"]["args"] == ("foo", "\n") and out["keys"] == (("x", 1), ())
    # What a payload holds keeps its types.
    assert make_decoder(True, None).loads(frames)["data"] == [1, [2]]

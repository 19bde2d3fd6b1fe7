"""benchmarks/lab: the network lab (Dask clusters across network namespaces) builds, moves
data over fastser:// on a shaped link, and leaves nothing behind; it refuses, saying why,
where namespaces cannot be made. The smoke test needs root and iproute2; it is skipped
elsewhere, unless FASTSER_LAB_REQUIRED=1 (then that skip is a failure)."""

import importlib.util
import json
import os
import pathlib
import subprocess
import sys
from types import ModuleType
from typing import Any

import pytest

LAB = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "lab"
REQUIRED = "FASTSER_LAB_REQUIRED"
SMOKE_TIMEOUT = 120.0  # seconds; the smoke run takes about 10 s on an idle 2-core machine


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"lab_{name}", LAB / f"{name}.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"no {name}.py in {LAB}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def unavailable(reason: str) -> None:
    """Skip, or fail where the lab is required."""
    if os.environ.get(REQUIRED) == "1":
        pytest.fail(f"{REQUIRED}=1, but the lab cannot run here: {reason}")
    pytest.skip(reason)


def netlab() -> Any:
    if not LAB.is_dir():
        unavailable(f"no {LAB} (the tests run outside the repository)")
    return load("netlab")


def require_lab() -> Any:
    """netlab, where namespaces, veths, a bridge and tbf can be made (otherwise a skip or
    a failure, with netlab's reason)."""
    lab = netlab()
    try:
        lab.check_can_build()
    except lab.LabError as exc:
        unavailable(str(exc))
    return lab


def test_refuses_without_root(monkeypatch: pytest.MonkeyPatch) -> None:
    lab = netlab()
    monkeypatch.setattr(lab.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(lab.shutil, "which", lambda tool: f"/usr/sbin/{tool}")
    with pytest.raises(lab.LabError, match="needs root"):
        lab.check_can_build()


@pytest.mark.parametrize("required", ["1", ""])
def test_required_turns_the_skip_into_a_failure(monkeypatch: pytest.MonkeyPatch,
                                                required: str) -> None:
    lab = netlab()
    monkeypatch.setattr(lab.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(lab.shutil, "which", lambda tool: f"/usr/sbin/{tool}")
    monkeypatch.setattr(sys.modules[__name__], "netlab", lambda: lab)
    monkeypatch.setenv(REQUIRED, required)
    expected = pytest.fail.Exception if required else pytest.skip.Exception
    with pytest.raises(expected, match="needs root"):
        require_lab()


def namespaces(prefix: str) -> list[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                            timeout=20).stdout
    return [line.split()[0] for line in listed.splitlines() if line.startswith(prefix)]


def test_smoke_fastser_transfer_on_1gbit(tmp_path: pathlib.Path) -> None:
    """Scheduler, 2 worker hosts and a client on the 1gbit profile (its rate alone where
    the kernel has no netem), one transfer of 2 compressible arrays of 8 MB over fastser://
    as it ships and over fastser:// with zstd: both complete, the zstd one compressed,
    neither crossed the shaped link faster than its rate, and every namespace the run made
    is gone."""
    # The build with the dask extra runs it (scripts/test.sh: the compiled one, where
    # tests/test_build.py checks distributed is there); the other has no cluster to start.
    pytest.importorskip("distributed", reason="fastser's dask extra is not installed")
    lab = require_lab()
    rows_file = tmp_path / "rows.json"
    process = subprocess.Popen(
        [sys.executable, str(LAB / "run.py"), "--profiles", "1gbit", "--without-netem",
         "--variants", "fastser,fastser-zstd", "--workloads", "transfer-small",
         "--rounds", "1", "--chunks", "2", "--chunk-mb", "8", "--tasks", "10",
         "--json", str(rows_file)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output = process.communicate(timeout=SMOKE_TIMEOUT)[0]
    finally:
        if process.poll() is None:
            process.terminate()  # the run removes what it made on SIGTERM
            process.communicate(timeout=60)
    assert process.returncode == 0, output
    assert namespaces(f"{lab.PREFIX}{process.pid}-") == []
    rows = {row["variant"]: row for row in json.loads(rows_file.read_text())}
    assert sorted(rows) == ["fastser", "fastser-zstd"], output
    moved = {}
    for variant, row in rows.items():
        assert (row["profile"], row["workload"]) == ("1gbit", "transfer-small")
        assert row["median_s"] > 0 and row["ratio_to_tcp"] is None
        assert 0 < row["link_fraction"] <= 1.1, output  # tbf's bucket starts full
        moved[variant] = row["link_mb_s"] * 1e6 * row["median_s"]
    # 16 MB of int64 of small values: zstd keeps under a tenth. As fastser:// ships
    # ("adaptive"), whether a frame is compressed depends on the link measured so far and
    # on how busy this machine's cores are (frames.cores): anything up to the plain bytes.
    assert 0.2e6 <= moved["fastser-zstd"] <= 4e6, output
    assert 0.2e6 <= moved["fastser"] <= 17e6, output
    assert "fastser compiled" in output or "fastser pure" in output

PROBE = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], 9000), timeout=float(sys.argv[2])).close()
    print("connected")
except OSError as exc:
    print(type(exc).__name__)
"""


def test_black_out_drops_a_links_packets_silently(tmp_path: pathlib.Path) -> None:
    """A blacked-out host's connections time out (packets dropped, nothing refused or
    unreachable), its link keeps its carrier, and restore() carries packets again."""
    lab = require_lab()
    network = lab.Lab(lab.PROFILES["veth"], str(tmp_path))
    try:
        network.build(["server", "peer"])
        server = network.hosts["server"].address
        network.spawn("server", [sys.executable, "-c",
                                 "import socket, time\n"
                                 "s = socket.create_server(('0.0.0.0', 9000))\n"
                                 "while True: s.accept()[0].close()"], {}, "server.log")

        def probe(timeout: float) -> str:
            return subprocess.run(
                ["ip", "netns", "exec", network.hosts["peer"].namespace, sys.executable,
                 "-c", PROBE, server, str(timeout)],
                capture_output=True, text=True, timeout=30).stdout.strip()

        # The server may take a moment to listen: refused until then.
        for _ in range(50):
            if probe(2.0) == "connected":
                break
        assert probe(2.0) == "connected"
        network.black_out("peer")
        assert probe(1.0) == "TimeoutError"
        link = lab.run(["ip", "-n", network.hosts["peer"].namespace, "link", "show",
                        lab.HOST_DEVICE]).stdout
        assert "LOWER_UP" in link and "NO-CARRIER" not in link
        network.restore("peer")
        assert probe(2.0) == "connected"
    finally:
        network.close()


RTT_PROBE = """
import socket, sys, time
times = []
for _ in range(5):
    start = time.perf_counter()
    socket.create_connection((sys.argv[1], 9000), timeout=5.0).close()
    times.append(time.perf_counter() - start)
print(sorted(times)[2])
"""


def test_the_delay_line_delays_each_host_and_leaves_nothing(tmp_path: pathlib.Path) -> None:
    """Where the kernel has no netem, the delay line holds what each host receives: a TCP
    connect (one round trip) between two hosts of a 20 ms link takes 40 ms; closing the lab
    stops the lines and removes the namespaces."""
    lab = require_lab()
    if lab.has_netem() or not lab.has_delay_line():
        pytest.skip("netem is here (the delay line is not used), or iptables' NFQUEUE is not")
    profile = lab.Profile("delayed", False, None, 20.0, 0.0)
    network = lab.Lab(profile, str(tmp_path), lab.DELAY_LINE)
    try:
        network.build(["server", "peer"])
        lines = [process.pid for process in network.processes]
        assert len(lines) == 2  # one line a host
        network.spawn("server", [sys.executable, "-c",
                                 "import socket\n"
                                 "s = socket.create_server(('0.0.0.0', 9000))\n"
                                 "while True: s.accept()[0].close()"], {}, "server.log")
        server = network.hosts["server"].address
        seconds = -1.0
        for _ in range(50):  # the server may take a moment to listen
            done = subprocess.run(
                ["ip", "netns", "exec", network.hosts["peer"].namespace, sys.executable,
                 "-c", RTT_PROBE, server], capture_output=True, text=True, timeout=30)
            if done.returncode == 0:
                seconds = float(done.stdout)
                break
        assert 0.038 <= seconds <= 0.2, seconds
    finally:
        network.close()
    assert namespaces(network.tag) == []
    for pid in lines:
        assert not os.path.exists(f"/proc/{pid}") or \
            open(f"/proc/{pid}/stat").read().split()[2] == "Z"

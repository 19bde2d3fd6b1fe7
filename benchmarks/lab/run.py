"""Dask clusters across hosts of a network lab on this machine: tcp:// against fastser://.

    python benchmarks/lab/run.py [--profiles 1gbit] [--workloads transfer]
        [--variants tcp,tcp-lz4,fastser,...] [--rounds 5] [--workers 2] [--chunks 8]
        [--chunk-mb 8] [--tasks 2000] [--map-tasks 10000] [--shuffle-rows 2000000]
        [--python PYTHON] [--json FILE]
    python benchmarks/lab/run.py --clean [--force]

Needs root (it makes network namespaces). For each profile it builds a network of hosts
(netlab.py: one namespace per host, veth pairs on one bridge, 10.213.77.0/24, links shaped
with tc), then starts in them, for every variant at once, what users run: `dask scheduler
--protocol ...` on the scheduler host, `dask worker ...` (with its nanny) on each worker
host, and the client script (client.py) on the client host, all with --python (the
environment holding fastser and distributed: fastser's entry points register fastser://).
Variants: tcp (as distributed ships it: no compression), tcp-lz4
(distributed.comm.compression=lz4 in every process), fastser (as it ships: compression
"adaptive", chosen for the link), fastser-none, fastser-lz4 and fastser-zstd
(distributed.comm.fastser.compression set so), tls and fastser-tls (with a CA and a
certificate the lab makes with openssl; compared with tls). Workloads: those of client.py;
`transfer` names both transfers, `all` every workload.

Each round runs every workload on every variant, the variants in an order rotated from round
to round, each run once the lab's processes are quiet. The report gives per profile,
workload and variant the median time, the median over rounds of the per-round ratio of the
variant's time to tcp's (below 1: faster than tcp), and the bytes that crossed the busiest
direction of a host's link per second, as a fraction of the link's rate (`link`), and the
CPU time every process of the lab took over the run, as a fraction of the machine's cores
(`cpu`; all hosts share them here: near 1, every core was busy; near 1 / cores, one
thread, such as a sender compressing, may have been the limit). Everything
the lab made is removed when it ends, fails or is interrupted; `--clean` removes what a
killed run left (`--force`: also that of runs still going).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from typing import Any, Final, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import (PROFILES, Interrupted, Lab, LabError, LogDir, Replies,  # noqa: E402
                    check_can_build, choose, clean_leftovers, delay_method, raise_on_signals)

CLIENT: Final = os.path.join(os.path.dirname(os.path.abspath(__file__)), "client.py")
REPLY: Final = "@lab "
COMPRESSION: Final = "DASK_DISTRIBUTED__COMM__COMPRESSION"
FASTSER_COMPRESSION: Final = "DASK_DISTRIBUTED__COMM__FASTSER__COMPRESSION"
# name: (scheme, the dask config every process of its cluster gets from its environment).
# fastser as it ships compresses "adaptive"ly (frames.adaptive); the other fastser
# variants fix its compression (distributed.comm.fastser.compression).
VARIANTS: Final = {
    "tcp": ("tcp", {COMPRESSION: "False"}),
    "tcp-lz4": ("tcp", {COMPRESSION: "lz4"}),
    "fastser": ("fastser", {COMPRESSION: "False"}),
    "fastser-none": ("fastser", {COMPRESSION: "False", FASTSER_COMPRESSION: "none"}),
    "fastser-lz4": ("fastser", {COMPRESSION: "False", FASTSER_COMPRESSION: "lz4"}),
    "fastser-zstd": ("fastser", {COMPRESSION: "False", FASTSER_COMPRESSION: "zstd"}),
    "tls": ("tls", {COMPRESSION: "False"}),
    "fastser-tls": ("fastser-tls", {COMPRESSION: "False"}),
    "fastser-tls-none": ("fastser-tls", {COMPRESSION: "False", FASTSER_COMPRESSION: "none"}),
}
DEFAULT_VARIANTS: Final = ("tcp", "tcp-lz4", "fastser", "fastser-none", "fastser-lz4",
                           "fastser-zstd")
# The variant a variant is compared with besides tcp: tls:// for the TLS ones.
BASE: Final = {"tls": "tls", "fastser-tls": "tls", "fastser-tls-none": "tls"}
WORKLOADS: Final = ("transfer-random", "transfer-small", "shuffle", "gather", "map")
ALIASES: Final = {"transfer": ("transfer-random", "transfer-small"), "all": WORKLOADS}
FIRST_PORT: Final = 8786  # the schedulers', one per variant
START_TIMEOUT: Final = 240.0  # seconds, for every cluster of a profile to be ready
# Quiet: every process of the lab together under QUIET_SHARE of a core each over
# QUIET_WINDOW seconds, waited for QUIET_TIMEOUT at most (as benchmarks/cluster.py does, for
# the same reason: on 2 cores, what one cluster still does slows the next run).
QUIET_SHARE: Final = 0.01
QUIET_WINDOW: Final = 0.2
QUIET_TIMEOUT: Final = 10.0
TICKS: Final = os.sysconf("SC_CLK_TCK")
# The machine's cores, which every host of the lab shares: a run whose processes kept them
# all busy (cpu_fraction near 1) was limited by the CPU, not by the link.
CORES: Final = len(os.sched_getaffinity(0))


class ClientProcess:
    """client.py in the client host, driven one JSON line at a time, every wait bounded."""

    def __init__(self, lab: Lab, variant: str, argv: list[str], env: dict[str, str]) -> None:
        self.variant = variant
        self.lab = lab
        self.process = lab.spawn("client", argv, env, f"client-{variant}.log", pipes=True)
        log = os.path.join(lab.log_dir, f"client-{variant}.log")
        self.replies = Replies(self.process, REPLY, log, f"the {variant} client")

    def receive(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            answer = self.replies.next(max(0.0, min(left, 1.0)))
            if answer is not None:
                return answer
            if left <= 0:
                raise LabError(f"the {self.variant} client did not answer in {timeout:g} s "
                               f"(its log: {self.replies.log})")
            self.lab.check_running()

    def ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        stdin = self.process.stdin
        if stdin is None:
            raise LabError("the client has no stdin")
        stdin.write((json.dumps(request) + "\n").encode())
        stdin.flush()
        return self.receive(timeout)


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as file:
                fields = file.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICKS


def cpu_wait_seconds() -> Optional[float]:
    """Seconds in which some runnable task of this machine waited for a core (Linux's
    pressure stall information, "some"); None where the kernel does not keep it."""
    try:
        with open("/proc/pressure/cpu") as file:
            for line in file:
                if line.startswith("some "):
                    return int(line.rsplit("total=", 1)[1]) / 1e6
    except (OSError, ValueError, IndexError):
        return None
    return None


def settle(lab: Lab) -> bool:
    """Wait until the lab's processes are quiet; False if still busy at QUIET_TIMEOUT."""
    deadline = time.monotonic() + QUIET_TIMEOUT
    while time.monotonic() < deadline:
        pids = lab.pids()
        before = cpu_seconds(pids)
        time.sleep(QUIET_WINDOW)
        if cpu_seconds(pids) - before < QUIET_SHARE * len(pids) * QUIET_WINDOW:
            return True
    return False


def make_certificates(directory: str, addresses: list[str]) -> dict[str, str]:
    """A CA and one certificate (for every address) signed by it, made with openssl in
    `directory`: what the TLS variants' processes are started with."""
    paths = {name: os.path.join(directory, f"lab-{name}") for name in
             ("ca.pem", "ca.key", "node.pem", "node.key", "node.csr", "ext.cnf")}
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    with open(paths["ext.cnf"], "w") as file:
        names = ",".join(f"IP:{address}" for address in addresses)
        file.write(f"subjectAltName={names}\nbasicConstraints=CA:FALSE\n"
                   "extendedKeyUsage=serverAuth,clientAuth\n")
    for argv in (["openssl", "req", "-x509", *key, "-keyout", paths["ca.key"], "-out",
                  paths["ca.pem"], "-days", "2", "-subj", "/CN=fastser lab CA"],
                 ["openssl", "req", *key, "-keyout", paths["node.key"], "-out",
                  paths["node.csr"], "-subj", "/CN=fastser lab"],
                 ["openssl", "x509", "-req", "-in", paths["node.csr"], "-CA", paths["ca.pem"],
                  "-CAkey", paths["ca.key"], "-CAcreateserial", "-out", paths["node.pem"],
                  "-days", "2", "-extfile", paths["ext.cnf"]]):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if done.returncode:
            raise LabError(f"openssl failed: {' '.join(argv)}\n{done.stderr}")
    return {"ca": paths["ca.pem"], "cert": paths["node.pem"], "key": paths["node.key"]}


def start_clusters(lab: Lab, args: argparse.Namespace, variants: list[str],
                   workers: list[str]) -> dict[str, ClientProcess]:
    """Every variant's scheduler, workers (with nannies) and client, started at once."""
    python = args.python
    base = {key: value for key, value in os.environ.items() if not key.startswith("DASK_")}
    scheduler_host = lab.hosts["scheduler"].address
    tls: list[str] = []
    if any(VARIANTS[variant][0] in ("tls", "fastser-tls") for variant in variants):
        certificates = make_certificates(lab.log_dir, sorted(
            {host.address for host in lab.hosts.values()} | {"127.0.0.1"}))
        tls = ["--tls-ca-file", certificates["ca"], "--tls-cert", certificates["cert"],
               "--tls-key", certificates["key"]]
    clients = {}
    envs = {}
    addresses = {}
    for number, variant in enumerate(variants):
        scheme, config = VARIANTS[variant]
        envs[variant] = dict(base, **config)
        port = FIRST_PORT + number
        addresses[variant] = f"{scheme}://{scheduler_host}:{port}"
        security = tls if scheme in ("tls", "fastser-tls") else []
        lab.spawn("scheduler", [python, "-m", "dask", "scheduler", "--protocol", scheme,
                                "--host", scheduler_host, "--port", str(port),
                                "--no-dashboard", "--dashboard-address", ":0", *security],
                  envs[variant], f"scheduler-{variant}.log")
    for variant in variants:
        scheme = VARIANTS[variant][0]
        security = tls if scheme in ("tls", "fastser-tls") else []
        for worker in workers:
            lab.spawn(worker, [python, "-m", "dask", "worker", addresses[variant],
                               "--protocol", scheme, "--host", lab.hosts[worker].address,
                               "--nanny", "--nthreads", "1", "--name", f"{worker}-{variant}",
                               "--no-dashboard", "--death-timeout", "60", *security],
                      envs[variant], f"{worker}-{variant}.log")
    for variant in variants:
        scheme = VARIANTS[variant][0]
        security = tls if scheme in ("tls", "fastser-tls") else []
        clients[variant] = ClientProcess(
            lab, variant, [python, CLIENT, addresses[variant], "--workers", str(len(workers)),
                           "--chunks", str(args.chunks), "--chunk-mb", str(args.chunk_mb),
                           "--tasks", str(args.tasks), "--map-tasks", str(args.map_tasks),
                           "--shuffle-rows", str(args.shuffle_rows), *security],
            envs[variant])
    deadline = time.monotonic() + START_TIMEOUT
    for variant, client in clients.items():
        ready = client.receive(max(1.0, deadline - time.monotonic()))
        print(f"  {variant}: {addresses[variant]}, fastser {ready['fastser']}, "
              f"compression: distributed {ready['compression']}, "
              f"fastser {ready['fastser_compression']}; "
              f"workers {', '.join(ready['workers'])}", flush=True)
    return clients


def busiest(before: dict[str, int], after: dict[str, int]) -> int:
    """The bytes that crossed the busiest direction of a link between two counts."""
    return max((after[key] - before[key] for key in after if key in before), default=0)


def run_profile(profile_name: str, args: argparse.Namespace, variants: list[str],
                workloads: list[str], log_dir: str) -> list[dict[str, Any]]:
    profile = PROFILES[profile_name]
    if profile.needs_netem() and args.delay_by is None:
        print(f"{profile_name}: neither netem nor the delay line here: its delay and loss are "
              "not applied", flush=True)
        profile = profile.without_netem()
    workers = [f"w{number}" for number in range(1, args.workers + 1)]
    print(f"{profile_name}: {profile.describe()}; building the network and starting "
          f"{len(variants)} cluster{'s' if len(variants) > 1 else ''}", flush=True)
    lab = Lab(profile, log_dir, args.delay_by)
    try:
        lab.build(["scheduler"] + workers + ["client"])
        clients = start_clusters(lab, args, variants, workers)
        times: dict[tuple[str, str], list[float]] = {}
        rates: dict[tuple[str, str], list[float]] = {}
        cpus: dict[tuple[str, str], list[float]] = {}
        waits: dict[tuple[str, str], list[float]] = {}
        seen_by: dict[str, Any] = {}
        busy = 0
        for round_ in range(args.rounds):
            shift = round_ % len(variants)
            order = variants[shift:] + variants[:shift]
            for workload in workloads:
                for variant in order:
                    client = clients[variant]
                    client.ask({"op": "prepare", "workload": workload, "round": round_},
                               args.timeout)
                    if not settle(lab):
                        busy += 1
                    pids = lab.pids()
                    before, cpu_before = lab.link_bytes(), cpu_seconds(pids)
                    wait_before = cpu_wait_seconds()
                    result = client.ask({"op": "run"}, args.timeout)
                    moved = busiest(before, lab.link_bytes())
                    cpu = cpu_seconds(pids) - cpu_before
                    wait_after = cpu_wait_seconds()
                    if wait_before is not None and wait_after is not None:
                        waits.setdefault((workload, variant), []).append(
                            (wait_after - wait_before) / result["seconds"])
                    times.setdefault((workload, variant), []).append(result["seconds"])
                    rates.setdefault((workload, variant), []).append(
                        moved / result["seconds"])
                    cpus.setdefault((workload, variant), []).append(
                        cpu / result["seconds"] / CORES)
            print(f"  round {round_ + 1}/{args.rounds} done", flush=True)
        for variant, client in clients.items():
            if VARIANTS[variant][0].startswith("fastser"):
                seen = client.ask({"op": "seen"}, args.timeout)["seen"]
                print(f"  {variant}, what its workers measured: {seen}", flush=True)
                seen_by[variant] = seen
        for client in clients.values():
            try:
                client.ask({"op": "quit"}, 1.0)
            except LabError:
                pass  # quit answers nothing; the client exits
    finally:
        lab.close()
    rows = []
    for workload in workloads:
        tcp = times.get((workload, "tcp"))
        for variant in variants:
            own = times[(workload, variant)]
            base = times.get((workload, BASE.get(variant, "tcp")))
            link_rate = statistics.median(rates[(workload, variant)])
            rows.append({
                "profile": profile_name, "workload": workload, "variant": variant,
                "network": profile.describe() + (
                    f" (by the {args.delay_by})" if profile.needs_netem() else ""),
                "median_s": statistics.median(own),
                "ratio_to_tcp": ratio(own, tcp),
                "base": BASE.get(variant, "tcp"),
                "ratio_to_base": ratio(own, base),
                "link_fraction": (link_rate * 8 / profile.rate_bit
                                  if profile.rate_bit is not None else None),
                "link_mb_s": link_rate / 1e6,
                "cpu_fraction": statistics.median(cpus[(workload, variant)]),
                "cpu_waiting": (statistics.median(waits[(workload, variant)])
                                if (workload, variant) in waits else None),
                "times_s": own,
                "fastser_seen": seen_by.get(variant),
            })
    if busy:
        print(f"  ({busy} runs started before the lab was quiet)", flush=True)
    return rows


def ratio(own: list[float], other: Optional[list[float]]) -> Optional[float]:
    """The median over rounds of own's time / other's in the same round."""
    if not other:
        return None
    return statistics.median(mine / theirs for mine, theirs in zip(own, other))


def print_rows(rows: list[dict[str, Any]]) -> None:
    print(f"{'profile':9s} {'workload':16s} {'variant':13s} {'median':>9s} {'/tcp':>6s} "
          f"{'/tls':>6s} {'link MB/s':>10s} {'link':>6s} {'cpu':>5s} {'wait':>5s}")
    for row in rows:
        tcp = "" if row["ratio_to_tcp"] is None else f"{row['ratio_to_tcp']:.2f}"
        tls = f"{row['ratio_to_base']:.2f}" if row["base"] == "tls" and \
            row["ratio_to_base"] is not None else ""
        fraction = "" if row["link_fraction"] is None else f"{row['link_fraction']:.2f}"
        waiting = "" if row.get("cpu_waiting") is None else f"{row['cpu_waiting']:.2f}"
        print(f"{row['profile']:9s} {row['workload']:16s} {row['variant']:13s} "
              f"{row['median_s']:8.3f}s {tcp:>6s} {tls:>6s} {row['link_mb_s']:10.1f} "
              f"{fraction:>6s} {row['cpu_fraction']:5.2f} {waiting:>5s}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", "--profile", default="1gbit",
                        help=f"comma-separated, of {', '.join(PROFILES)}")
    parser.add_argument("--workloads", default="transfer",
                        help=f"comma-separated, of {', '.join(WORKLOADS)} (transfer: both "
                        "transfers)")
    parser.add_argument("--variants", default=",".join(DEFAULT_VARIANTS),
                        help=f"comma-separated, of {', '.join(VARIANTS)} (default: "
                        f"{','.join(DEFAULT_VARIANTS)})")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2, choices=(2, 3))
    parser.add_argument("--chunks", type=int, default=8, help="arrays per transfer")
    parser.add_argument("--chunk-mb", type=int, default=8, help="MB per array")
    parser.add_argument("--tasks", type=int, default=2000, help="results per gather")
    parser.add_argument("--map-tasks", type=int, default=10_000, help="tasks per map")
    parser.add_argument("--shuffle-rows", type=int, default=2_000_000,
                        help="rows of the shuffled dataframe")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter of the cluster's processes (default: this one)")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds one request to a client may take")
    parser.add_argument("--without-netem", action="store_true",
                        help="run profiles with their rate alone, without their delay and "
                        "loss (marked in the report): where neither netem nor the delay line "
                        "(iptables' NFQUEUE) is here, instead of refusing")
    parser.add_argument("--json", metavar="FILE", help="write the rows to FILE")
    parser.add_argument("--logs", metavar="DIR", help="keep the processes' logs in DIR")
    parser.add_argument("--clean", action="store_true",
                        help="remove what killed runs left (namespaces, links, processes)")
    parser.add_argument("--force", action="store_true",
                        help="with --clean: also what runs still going made")
    args = parser.parse_args()
    profiles = choose(args.profiles, tuple(PROFILES), "profile")
    workloads = choose(args.workloads, WORKLOADS, "workload", ALIASES)
    variants = choose(args.variants, tuple(VARIANTS), "variant")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    try:
        check_can_build()
    except LabError as exc:
        print(f"lab: {exc}", file=sys.stderr)
        return 2
    args.delay_by = None if args.without_netem else delay_method()
    if args.clean:
        removed = clean_leftovers(args.force)
        print(f"removed {len(removed)} namespaces" + (f": {', '.join(removed)}"
                                                       if removed else ""))
        return 0
    missing = [name for name in profiles if PROFILES[name].needs_netem()]
    if missing and args.delay_by is None and not args.without_netem:
        print(f"lab: the profiles {', '.join(missing)} need tc's netem (delay, loss), which "
              "this kernel lacks, or the delay line (iptables with the NFQUEUE target, not "
              "found); --without-netem runs them with their rate alone", file=sys.stderr)
        return 2
    raise_on_signals()
    logs = LogDir(args.logs)
    rows: list[dict[str, Any]] = []
    failed = False
    try:
        for profile in profiles:
            rows += run_profile(profile, args, variants, workloads, logs.path)
    except (LabError, Interrupted) as exc:
        failed = True
        print(f"lab: {exc}", file=sys.stderr)
    except Exception:
        failed = True
        traceback.print_exc()
    if rows:
        print_rows(rows)
    if args.json and rows:
        with open(args.json, "w") as file:
            json.dump(rows, file, indent=1)
    logs.finish(failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

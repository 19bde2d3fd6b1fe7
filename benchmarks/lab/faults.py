"""Faults in a Dask cluster across hosts of the network lab, on tcp:// and fastser:// alike.

    python benchmarks/lab/faults.py [--schemes tcp,fastser] [--faults kill,blackout,trickle]
        [--repeats 3] [--profile 1gbit] [--python PYTHON] [--timeout 300] [--json FILE]
        [--logs DIR]

Needs root (it makes network namespaces, netlab.py). For each scheme it builds a network
(scheduler, worker hosts w1 and w2, a client host, a trickler host), starts what users run
in it (`dask scheduler --protocol SCHEME`, `dask worker` with its nanny on each worker
host, all with --python and nothing preloaded), and runs each fault --repeats times, each
time with a new fault_client.py on the client host:

  kill      a P2P shuffle of a dataframe; once half of its transfer tasks have run, w2's
            worker process (the nanny's child, not the nanny) gets SIGKILL and its nanny
            starts another. Counted: the result is correct, and the worker came back.
  blackout  arrays made on w1 and read by tasks on w2; once 32 MB have reached w2, its link
            drops every packet both ways (Lab.black_out) for 10 s, then is restored.
            Counted: the sums are correct, or the error the computation raised.
  trickle   client.map of 10,000 tiny tasks, alone and then while a peer on the trickler
            host sends a byte a second into the scheduler's port (for at least 40 s, longer
            than distributed.comm.timeouts.connect, 60 s at most). Counted: the map is
            correct; reported: its time against the map alone, the scheduler's RSS (VmRSS)
            before, at its peak during and after, and whether and when the scheduler closed
            the trickler's connection.

A run that has not ended after --timeout seconds (more than distributed's own timeouts:
30 s to connect, 5 minutes without a heartbeat before a worker is removed) is counted as
hung and its client killed. The report gives per scheme and fault the runs, how many were
correct, failed with an error (which), hung, or missed their fault (the work ended before
the fault was due), and the median seconds; --json writes a row per run. Everything the lab
made is removed when the run ends, fails or is interrupted.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import (PROFILES, Interrupted, Lab, LabError, LogDir, Replies,  # noqa: E402
                    check_can_build, choose, delay_method, raise_on_signals, tail)

CLIENT: Final = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fault_client.py")
REPLY: Final = "@fault "
SCHEMES: Final = ("tcp", "fastser")
FAULTS: Final = ("kill", "blackout", "trickle")
SCENARIOS: Final = {"kill": "shuffle", "blackout": "transfer", "trickle": "map"}
WORKERS: Final = ("w1", "w2")
VICTIM: Final = "w2"  # the worker killed, or whose link goes dark
PORT: Final = 8786
START_TIMEOUT: Final = 240.0  # seconds, for the cluster to start and a client to be ready
RESTART_TIMEOUT: Final = 120.0  # seconds, for a nanny to start a new worker
STOP_TIMEOUT: Final = 10.0  # seconds, for a client to exit once told to
BLACKOUT_SECONDS: Final = 10.0
BLACKOUT_AFTER_BYTES: Final = 32_000_000  # what w2 has been sent when its link goes dark
TRICKLE_MIN_SECONDS: Final = 40.0
TRICKLE_MAX_SECONDS: Final = 60.0
SAMPLE_INTERVAL: Final = 0.2  # seconds between looks at the scheduler's RSS


class Hung(Exception):
    """A client said nothing within its time."""


class FaultClient:
    """fault_client.py in a host of the lab, read one REPLY line at a time, every wait
    bounded."""

    def __init__(self, lab: Lab, role: str, argv: list[str], env: dict[str, str],
                 log_name: str) -> None:
        self.process = lab.spawn(role, argv, env, log_name, pipes=True)
        self.replies = Replies(self.process, REPLY, os.path.join(lab.log_dir, log_name),
                               f"the fault client on {role}")
        self.next = self.replies.next

    def expect(self, kinds: set[str], timeout: float,
               tick: Optional[Callable[[], None]] = None) -> dict[str, Any]:
        """The next message of one of `kinds` (others are dropped), calling `tick` at least
        every SAMPLE_INTERVAL while waiting; Hung after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Hung(f"no {' or '.join(sorted(kinds))} in {timeout:g} s")
            message = self.next(min(left, SAMPLE_INTERVAL) if tick else left)
            if tick:
                tick()
            if message is not None and kinds & message.keys():
                return message

    def send(self, line: str) -> None:
        stdin = self.process.stdin
        if stdin is None:
            raise LabError("the fault client has no stdin")
        try:
            stdin.write((line + "\n").encode())
            stdin.flush()
        except BrokenPipeError:
            pass  # it has ended: its last answers are still read

    def stop(self) -> None:
        """Tell the client to end; kill its process group if it has not within
        STOP_TIMEOUT."""
        self.send("quit")
        try:
            self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            kill_group(self.process)

    def kill(self) -> None:
        kill_group(self.process)


def kill_group(process: "subprocess.Popen[bytes]") -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        process.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        pass


def rss_kb(pid: int) -> int:
    """The process's resident memory, VmRSS in kB (0 once it has gone)."""
    try:
        with open(f"/proc/{pid}/status") as file:
            for line in file:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def worker_pid(nanny: int) -> Optional[int]:
    """The nanny's worker: its child started by multiprocessing's spawn (not its resource
    tracker)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as file:
                parent = int(file.read().rsplit(")", 1)[1].split()[1])
            if parent != nanny:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                if b"spawn_main" in file.read():
                    return int(entry)
        except (OSError, ValueError, IndexError):
            continue
    return None


@dataclass
class Cluster:
    scheme: str
    address: str
    env: dict[str, str]
    processes: dict[str, "subprocess.Popen[bytes]"]  # by role: the scheduler, the nannies
    logs: dict[str, str]

    def check_running(self) -> None:
        """LabError, with the end of its log, if the scheduler or a nanny has exited (a
        fault takes a worker down; its nanny, never)."""
        for role, process in self.processes.items():
            if process.poll() is not None:
                log = self.logs[role]
                raise LabError(f"the {self.scheme} {role} exited ({process.returncode}); "
                               f"the end of its log, {log}:\n{tail(log, 15)}")


def start_cluster(lab: Lab, scheme: str, python: str) -> Cluster:
    """The scheduler and the workers (each with its nanny), as users start them."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("DASK_")}
    host = lab.hosts["scheduler"].address
    address = f"{scheme}://{host}:{PORT}"
    argvs = {"scheduler": [python, "-m", "dask", "scheduler", "--protocol", scheme, "--host",
                           host, "--port", str(PORT), "--no-dashboard", "--dashboard-address",
                           ":0"]}
    for role in WORKERS:
        argvs[role] = [python, "-m", "dask", "worker", address, "--protocol", scheme, "--host",
                       lab.hosts[role].address, "--nanny", "--nthreads", "1", "--name", role,
                       "--no-dashboard", "--death-timeout", "60"]
    processes = {}
    logs = {}
    for role, argv in argvs.items():
        processes[role] = lab.spawn(role, argv, env, f"{role}-{scheme}.log")
        logs[role] = os.path.join(lab.log_dir, f"{role}-{scheme}.log")
    return Cluster(scheme, address, env, processes, logs)


class Run:
    """One fault on one scheme, once: starts its client and records the row."""

    def __init__(self, lab: Lab, cluster: Cluster, args: argparse.Namespace, fault: str,
                 repeat: int) -> None:
        self.lab = lab
        self.cluster = cluster
        self.args = args
        self.fault = fault
        self.row: dict[str, Any] = {"scheme": cluster.scheme, "fault": fault,
                                    "repeat": repeat, "outcome": None, "seconds": None,
                                    "error": None}
        self.name = f"{cluster.scheme}-{fault}-{repeat}"

    def client(self, scenario: str) -> FaultClient:
        args = self.args
        argv = [args.python, CLIENT, self.cluster.address, scenario, "--receiver",
                self.lab.hosts[VICTIM].address, "--tasks", str(args.tasks)]
        client = FaultClient(self.lab, "client", argv, self.cluster.env,
                             f"client-{self.name}.log")
        client.expect({"ready"}, START_TIMEOUT)
        return client

    def record(self, result: dict[str, Any]) -> None:
        self.row["seconds"] = result["seconds"]
        self.row["error"] = result["error"]
        self.row["outcome"] = ("correct" if result["correct"] else
                               "error" if result["error"] else "wrong")
        self.row.update((key, value) for key, value in result.items()
                        if key not in ("correct", "error", "seconds"))

    def run(self) -> dict[str, Any]:
        self.cluster.check_running()
        client = self.client(SCENARIOS[self.fault])
        try:
            if self.fault == "kill":
                self.kill(client)
            elif self.fault == "blackout":
                self.blackout(client)
            else:
                self.trickle(client)
        except Hung as exc:
            self.row["outcome"] = "hung"
            self.row["error"] = str(exc)
            client.kill()
        finally:
            client.stop()
        return self.row

    def kill(self, client: FaultClient) -> None:
        nanny = self.cluster.processes[VICTIM].pid
        client.send("go")
        start = time.monotonic()
        message = client.expect({"fault", "result"}, self.args.timeout)
        if "fault" in message:
            victim = worker_pid(nanny)
            if victim is None:
                raise LabError(f"no worker process under {VICTIM}'s nanny ({nanny})")
            os.kill(victim, signal.SIGKILL)
            self.row["killed_after_s"] = time.monotonic() - start
            self.row["missed"] = bool(message["fault"]["finished"])
            message = client.expect({"result"}, self.args.timeout - (time.monotonic() - start))
            self.row["restarted"] = self.restarted(nanny, victim)
        else:
            self.row["missed"] = True  # it ended (failed) before the fault was due
        self.record(message["result"])

    def restarted(self, nanny: int, killed: int) -> bool:
        """Whether the nanny has started a new worker within RESTART_TIMEOUT."""
        deadline = time.monotonic() + RESTART_TIMEOUT
        while time.monotonic() < deadline:
            if worker_pid(nanny) not in (None, killed):
                return True
            time.sleep(SAMPLE_INTERVAL)
        return False

    def blackout(self, client: FaultClient) -> None:
        lab = self.lab
        counter = f"p-{VICTIM} tx"  # what the bridge sent to the victim's host
        before = lab.link_bytes()[counter]
        client.send("go")
        start = time.monotonic()
        deadline = start + self.args.timeout
        message = None
        while message is None:
            message = client.next(0.02)
            if message is None and lab.link_bytes()[counter] - before >= BLACKOUT_AFTER_BYTES:
                break
            if time.monotonic() > deadline:
                raise Hung(f"no result in {self.args.timeout:g} s")
        if message is not None:  # the transfer ended before its link could go dark
            self.row["missed"] = True
            self.record(message["result"])
            return
        self.row["missed"] = False
        self.row["blackout_after_s"] = time.monotonic() - start
        lab.black_out(VICTIM)
        dark = time.monotonic()
        try:
            message = client.next(BLACKOUT_SECONDS)
            time.sleep(max(0.0, BLACKOUT_SECONDS - (time.monotonic() - dark)))
        finally:
            lab.restore(VICTIM)
        if message is None:
            message = client.expect({"result"}, deadline - time.monotonic())
        self.record(message["result"])

    def trickle(self, client: FaultClient) -> None:
        lab = self.lab
        scheduler = self.cluster.processes["scheduler"].pid
        peak = [0]

        def sample() -> None:
            peak[0] = max(peak[0], rss_kb(scheduler))

        client.send("go")
        alone = client.expect({"result"}, self.args.timeout, sample)["result"]
        self.row["alone_s"] = alone["seconds"]
        self.row["alone_correct"] = alone["correct"]
        self.row["rss_alone_peak_kb"] = peak[0]
        self.row["rss_before_kb"] = peak[0] = rss_kb(scheduler)
        target = f"{lab.hosts['scheduler'].address}:{PORT}"
        trickler = FaultClient(lab, "trickler", [self.args.python, CLIENT, "--trickle", target,
                                                 "--seconds", str(TRICKLE_MAX_SECONDS)],
                               self.cluster.env, f"trickler-{self.name}.log")
        try:
            trickler.expect({"connected"}, START_TIMEOUT)
            start = time.monotonic()
            client.send("go")
            result = client.expect({"result"}, self.args.timeout, sample)["result"]
            # Trickle on until TRICKLE_MIN_SECONDS: long enough for a handshake deadline.
            left = TRICKLE_MIN_SECONDS - (time.monotonic() - start)
            message = trickler.next(max(0.0, left))
            if message is None:
                trickler.send("stop")
                message = trickler.expect({"result"}, TRICKLE_MAX_SECONDS)
        finally:
            trickler.stop()
        self.row["trickler"] = message["result"]
        self.row["rss_peak_kb"] = peak[0]
        time.sleep(1.0)
        self.row["rss_after_kb"] = rss_kb(scheduler)
        self.record(result)
        self.row["slowdown"] = result["seconds"] / alone["seconds"]


def run_scheme(scheme: str, args: argparse.Namespace, log_dir: str) -> list[dict[str, Any]]:
    profile = PROFILES[args.profile]
    if profile.needs_netem() and args.delay_by is None:
        profile = profile.without_netem()  # the faults need the bridge, not the delay
    print(f"{scheme}://: {profile.describe()}; building the network and starting the "
          "cluster", flush=True)
    rows = []
    lab = Lab(profile, log_dir, args.delay_by)
    try:
        lab.build(["scheduler", *WORKERS, "client", "trickler"])
        cluster = start_cluster(lab, scheme, args.python)
        for repeat in range(args.repeats):
            for fault in args.faults:
                row = Run(lab, cluster, args, fault, repeat).run()
                rows.append(row)
                seconds = "" if row["seconds"] is None else f" in {row['seconds']:.1f} s"
                error = f": {row['error']}" if row["error"] else ""
                print(f"  {fault} {repeat + 1}/{args.repeats}: {row['outcome']}{seconds}"
                      f"{' (missed)' if row.get('missed') else ''}{error}", flush=True)
    finally:
        lab.close()
    return rows


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A line per scheme and fault: the counts and the median time."""
    lines = []
    for scheme in dict.fromkeys(row["scheme"] for row in rows):
        for fault in dict.fromkeys(row["fault"] for row in rows):
            own = [row for row in rows if row["scheme"] == scheme and row["fault"] == fault]
            if not own:
                continue
            outcomes = Counter(row["outcome"] for row in own)
            errors = Counter((row["error"] or "").split(":")[0] for row in own
                             if row["outcome"] == "error")
            times = [row["seconds"] for row in own if row["seconds"] is not None]
            lines.append({
                "scheme": scheme, "fault": fault, "runs": len(own),
                "correct": outcomes["correct"], "wrong": outcomes["wrong"],
                "error": outcomes["error"], "errors": dict(errors), "hung": outcomes["hung"],
                "missed": sum(bool(row.get("missed")) for row in own),
                "median_s": statistics.median(times) if times else None,
                "notes": notes(fault, own),
            })
    return lines


def notes(fault: str, rows: list[dict[str, Any]]) -> str:
    if fault == "kill":
        return f"worker restarted {sum(bool(row.get('restarted')) for row in rows)}/{len(rows)}"
    if fault != "trickle":
        return ""
    done = [row for row in rows if "rss_peak_kb" in row and row["seconds"] is not None]
    if not done:
        return ""
    closed = [row["trickler"]["closed_after_s"] for row in done
              if row["trickler"]["closed_by_peer"]]
    growth = max((row["rss_peak_kb"] - row["rss_alone_peak_kb"]) / 1024 for row in done)
    after = max((row["rss_after_kb"] - row["rss_before_kb"]) / 1024 for row in done)
    text = (f"map x{statistics.median(row['slowdown'] for row in done):.2f} of alone; "
            f"RSS peak {growth:+.0f} MB over alone's, after {after:+.0f} MB; trickler closed "
            f"{len(closed)}/{len(done)}")
    if closed:
        text += f" after {min(closed):.0f}-{max(closed):.0f} s"
    return text


def print_summary(lines: list[dict[str, Any]]) -> None:
    print(f"{'scheme':8s} {'fault':9s} {'runs':>4s} {'correct':>7s} {'error':>5s} "
          f"{'hung':>4s} {'missed':>6s} {'median':>8s}  notes")
    for line in lines:
        median = "" if line["median_s"] is None else f"{line['median_s']:.1f}s"
        errors = ", ".join(f"{name} x{count}" for name, count in line["errors"].items())
        wrong = f"WRONG x{line['wrong']}; " if line["wrong"] else ""
        notes = "; ".join(text for text in (wrong + line["notes"], errors) if text)
        print(f"{line['scheme']:8s} {line['fault']:9s} {line['runs']:4d} "
              f"{line['correct']:7d} {line['error']:5d} {line['hung']:4d} "
              f"{line['missed']:6d} {median:>8s}  {notes}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schemes", default=",".join(SCHEMES))
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", default="1gbit",
                        help=f"one of {', '.join(name for name in PROFILES if name != 'loopback')}")
    parser.add_argument("--tasks", type=int, default=10_000, help="tasks of the trickle's map")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter of the cluster's processes (default: this one)")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds after which a run counts as hung")
    parser.add_argument("--json", metavar="FILE", help="write a row per run to FILE")
    parser.add_argument("--logs", metavar="DIR", help="keep the processes' logs in DIR")
    args = parser.parse_args()
    schemes = choose(args.schemes, SCHEMES, "scheme")
    args.faults = choose(args.faults, FAULTS, "fault")
    if args.profile not in PROFILES or PROFILES[args.profile].shared:
        parser.error("--profile must be a profile with a bridge (not loopback): a blackout "
                     "drops a bridge port's packets")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    try:
        check_can_build()
    except LabError as exc:
        print(f"lab: {exc}", file=sys.stderr)
        return 2
    args.delay_by = delay_method()
    raise_on_signals()
    logs = LogDir(args.logs)
    rows: list[dict[str, Any]] = []
    failed = False
    try:
        for scheme in schemes:
            rows += run_scheme(scheme, args, logs.path)
    except (LabError, Interrupted) as exc:
        failed = True
        print(f"lab: {exc}", file=sys.stderr)
    except Exception:
        failed = True
        traceback.print_exc()
    if rows:
        print_summary(summary(rows))
    if args.json and rows:
        with open(args.json, "w") as file:
            json.dump(rows, file, indent=1)
    logs.finish(failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

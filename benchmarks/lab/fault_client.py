"""The fault runs' client (faults.py): in the client host, connected to one cluster, it runs
one scenario each time faults.py says "go", and says when the fault is due; or, with
--trickle, it is the slow peer of the trickle fault.

    python fault_client.py SCHEDULER {shuffle,transfer,map} --receiver HOST [--rows N]
        [--partitions N] [--arrays N] [--array-mb N] [--tasks N]
    python fault_client.py --trickle HOST:PORT --seconds S

Lines on stdin: "go" (run the scenario once more), anything else ends the client. Each
answer is one line on stdout starting with REPLY: {"ready": ...} once both workers are there
and the scenario's data is made, {"fault": ...} where the fault is due (shuffle: half of
the shuffle's transfer tasks have run), {"result": ...} when the scenario has ended
(`correct`, `seconds`, `error` as "Type: message" when it raised), {"error": traceback}
when the client itself failed.

Scenarios (the worker on --receiver is the one faults.py harms):
  shuffle   a P2P shuffle (df.shuffle("key", shuffle_method="p2p")) of --rows rows (an int
            key, a float, a low-cardinality string, a timestamp) in --partitions partitions,
            checked against the same data in pandas: the same rows (a sum of row hashes),
            each key in one output partition;
  transfer  --arrays arrays of random float64 of --array-mb MB made on the other worker and
            read by tasks on the receiver (worker to worker), their CRC-32s checked;
  map       client.map of --tasks tiny tasks, their results checked.
"""

import argparse
import json
import select
import socket
import struct
import sys
import time
import traceback
import zlib
from typing import Any, Final

REPLY: Final = "@fault "
CONNECT_TIMEOUT: Final = 240.0  # seconds, for the scheduler and both workers to be there
PROGRESS_INTERVAL: Final = 0.05  # seconds between looks at the shuffle's tasks
CITIES: Final = ("Amsterdam", "Berlin", "Cairo", "Delhi", "Lima", "Oslo", "Quito", "Seoul")
KEYS: Final = 100_000  # distinct shuffle keys: about 20 rows each at 2e6 rows
EPOCH: Final = 1_700_000_000  # seconds; the timestamps span a year from here
# The trickler's bytes: distributed's tcp:// framing announcing a first message of 1 KiB
# (native order, as distributed writes it), then that message, never finished at a byte a
# second. A slow peer, not a malformed one: neither listener can refuse it on its first
# bytes, only a deadline can end it.
TRICKLE_ANNOUNCED: Final = 1024


def reply(message: dict[str, Any]) -> None:
    sys.stdout.write(REPLY + json.dumps(message) + "\n")
    sys.stdout.flush()


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


def make_partition(number: int, rows: int) -> Any:
    import numpy
    import pandas
    rng = numpy.random.default_rng(number)
    cities = numpy.array(CITIES, dtype=object)
    return pandas.DataFrame({
        "key": rng.integers(0, KEYS, rows, dtype=numpy.int64),
        "value": rng.random(rows),
        "city": cities[rng.integers(0, len(CITIES), rows)],
        "time": pandas.to_datetime(EPOCH + rng.integers(0, 365 * 86400, rows), unit="s"),
    })


def summarize(part: Any) -> dict[str, Any]:
    """Rows, a sum of row hashes (order-free) and the distinct keys of a partition; the
    columns normalised first, so that dask's string and time dtypes hash as pandas' do."""
    import numpy
    import pandas
    plain = pandas.DataFrame({
        "key": part["key"].to_numpy(dtype=numpy.int64),
        "value": part["value"].to_numpy(dtype=numpy.float64),
        "city": part["city"].astype(object).to_numpy(),
        "time": part["time"].to_numpy(dtype="datetime64[ns]").view(numpy.int64),
    })
    hashes = pandas.util.hash_pandas_object(plain, index=False).to_numpy()
    return {"rows": len(plain), "hash": int(hashes.sum(dtype=numpy.uint64)),
            "keys": numpy.unique(plain["key"].to_numpy())}


def total_hash(summaries: list[dict[str, Any]]) -> int:
    return int(sum(summary["hash"] for summary in summaries)) % 2**64


def shuffle_progress(dask_scheduler: Any) -> dict[str, int]:
    """The shuffle's transfer tasks, in all and done, and whether its barrier has run (on
    the scheduler)."""
    counts = {"transfers": 0, "done": 0, "barrier_done": 0}
    for task in dask_scheduler.tasks.values():
        name = task.prefix.name
        if "shuffle-transfer" in name:
            counts["transfers"] += 1
            counts["done"] += task.state in ("memory", "released", "forgotten")
        elif "shuffle-barrier" in name and task.state == "memory":
            counts["barrier_done"] = 1
    return counts


def make_array(seed: int, items: int) -> Any:
    import numpy
    return numpy.random.default_rng(seed).random(items)


def checksum(array: Any) -> int:
    """The CRC-32 of the array's bytes: they arrived intact."""
    return zlib.crc32(array)


def bump(number: int) -> int:
    return number + 1


class Scenario:
    def __init__(self, client: Any, args: argparse.Namespace) -> None:
        self.client = client
        self.args = args
        self.runs = 0
        workers = client.scheduler_info()["workers"]
        hosts = {address: info["host"] for address, info in workers.items()}
        self.receiver = [address for address, host in hosts.items()
                         if host == args.receiver]
        self.sender = [address for address in hosts if address not in self.receiver]
        if len(self.receiver) != 1 or len(self.sender) != 1:
            raise RuntimeError(f"expected one worker on {args.receiver} and one elsewhere: "
                               f"{hosts}")
        self.made: list[Any] = []
        self.expected: Any = None
        if args.scenario == "shuffle":
            self.expected = self.local_shuffle_summary()
        elif args.scenario == "transfer":
            self.make_arrays()

    def ready(self) -> dict[str, Any]:
        return {"receiver": self.receiver[0], "sender": self.sender[0]}

    def local_shuffle_summary(self) -> tuple[int, int]:
        args = self.args
        parts = [summarize(make_partition(number, args.rows // args.partitions))
                 for number in range(args.partitions)]
        return sum(part["rows"] for part in parts), total_hash(parts)

    def make_arrays(self) -> None:
        import distributed
        wait: Any = distributed.wait  # unannotated in distributed
        args = self.args
        items = args.array_mb * 1_000_000 // 8
        seeds = [self.runs * args.arrays + number for number in range(args.arrays)]
        self.made = self.client.map(make_array, seeds, [items] * args.arrays,
                                    workers=self.sender, key=[f"array-{seed}"
                                                              for seed in seeds])
        wait(self.made, timeout=CONNECT_TIMEOUT)
        self.expected = [checksum(make_array(seed, items)) for seed in seeds]

    def run(self) -> dict[str, Any]:
        """The scenario once: {"correct", "seconds", "error", ...}."""
        self.runs += 1
        start = time.perf_counter()
        result: dict[str, Any] = {"correct": False, "error": None}
        try:
            if self.args.scenario == "shuffle":
                result.update(self.shuffle())
            elif self.args.scenario == "transfer":
                result.update(self.transfer())
            else:
                result.update(self.map())
        except Exception as exc:
            result["error"] = error_text(exc)
        result["seconds"] = time.perf_counter() - start
        return result

    def shuffle(self) -> dict[str, Any]:
        import dask.dataframe
        import numpy
        from dask.delayed import delayed
        from_map: Any = dask.dataframe.from_map  # unannotated in dask
        args = self.args
        frame = from_map(make_partition, range(args.partitions),
                         rows=args.rows // args.partitions)
        shuffled = frame.shuffle("key", shuffle_method="p2p")
        parts = [delayed(summarize)(part) for part in shuffled.to_delayed()]
        futures = self.client.compute(parts)
        signalled: dict[str, Any] = {}
        # Look at the shuffle from the scheduler until half its transfers have run: the
        # fault is due then (or at once, if the shuffle ran past that between two looks).
        while not signalled:
            progress = self.client.run_on_scheduler(shuffle_progress)
            finished = all(future.done() for future in futures)
            if (progress["transfers"] and progress["done"] * 2 >= progress["transfers"]
                    or progress["barrier_done"] or finished):
                signalled = dict(progress, finished=finished)
                reply({"fault": signalled})
            else:
                time.sleep(PROGRESS_INTERVAL)
        summaries = self.client.gather(futures)
        rows = sum(summary["rows"] for summary in summaries)
        keys = numpy.concatenate([summary["keys"] for summary in summaries])
        split_keys = len(keys) - len(numpy.unique(keys))
        correct = (rows, total_hash(summaries)) == self.expected and split_keys == 0
        return {"correct": correct, "rows": rows, "split_keys": split_keys,
                "fault_at": signalled}

    def transfer(self) -> dict[str, Any]:
        key = f"checksum-{self.runs}"
        sums = self.client.map(checksum, self.made, workers=self.receiver,
                               key=[f"{key}-{number}" for number in range(len(self.made))])
        got = self.client.gather(sums)
        wrong = [number for number, (mine, theirs) in enumerate(zip(got, self.expected))
                 if mine != theirs]
        # The next run reads arrays the receiver does not hold yet (these are released).
        del sums
        self.make_arrays()
        return {"correct": not wrong and len(got) == len(self.expected), "wrong_arrays": wrong}

    def map(self) -> dict[str, Any]:
        tasks = self.args.tasks
        futures = self.client.map(bump, range(tasks),
                                  key=[f"bump-{self.runs}-{number}" for number in range(tasks)])
        # Released as it returns: cancel would log a line per key on the scheduler.
        got = self.client.gather(futures)
        return {"correct": got == list(range(1, tasks + 1))}


def trickle(target: str, seconds: float) -> dict[str, Any]:
    """Send a byte a second to `target` for `seconds` at most, or until the peer closes the
    connection or stdin ends; what the peer sends is read and dropped."""
    host, port = target.rsplit(":", 1)
    data = struct.pack("=Q", TRICKLE_ANNOUNCED) + bytes(TRICKLE_ANNOUNCED)
    start = time.monotonic()
    sock = socket.create_connection((host, int(port)), timeout=10)
    reply({"connected": time.monotonic() - start})
    start = time.monotonic()
    sent = received = 0
    closed_after = None
    error = None
    stdin = sys.stdin.fileno()
    next_byte = start
    try:
        while time.monotonic() - start < seconds:
            now = time.monotonic()
            if now >= next_byte:
                sock.send(data[sent % len(data):sent % len(data) + 1])
                sent += 1
                next_byte += 1.0
                continue
            readable, _, _ = select.select([sock, stdin], [], [], next_byte - now)
            if stdin in readable:
                break  # faults.py has seen enough (a line, or its end)
            if sock in readable:
                chunk = sock.recv(65536)
                if not chunk:
                    closed_after = time.monotonic() - start
                    break
                received += len(chunk)
    except OSError as exc:  # reset by the peer, or a send into a closed connection
        closed_after = time.monotonic() - start
        error = error_text(exc)
    finally:
        sock.close()
    return {"closed_by_peer": closed_after is not None, "closed_after_s": closed_after,
            "sent": sent, "received": received, "error": error,
            "seconds": time.monotonic() - start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scheduler", nargs="?")
    parser.add_argument("scenario", nargs="?", choices=("shuffle", "transfer", "map"))
    parser.add_argument("--receiver", help="the host of the worker that is harmed")
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--arrays", type=int, default=24)
    parser.add_argument("--array-mb", type=int, default=16)
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--trickle", metavar="HOST:PORT")
    parser.add_argument("--seconds", type=float, default=45.0)
    args = parser.parse_args()
    if args.trickle:
        reply({"result": trickle(args.trickle, args.seconds)})
        return
    if not (args.scheduler and args.scenario and args.receiver):
        parser.error("SCHEDULER, a scenario and --receiver are needed")
    import distributed  # not before: the trickler needs none of it
    client: Any = distributed.Client(args.scheduler,  # type: ignore[no-untyped-call]  # distributed's
                                     timeout=CONNECT_TIMEOUT)
    try:
        client.wait_for_workers(2, timeout=CONNECT_TIMEOUT)
        scenario = Scenario(client, args)
        reply({"ready": scenario.ready()})
        for line in sys.stdin:
            if line.strip() != "go":
                break
            reply({"result": scenario.run()})
    finally:
        client.close()


if __name__ == "__main__":
    try:
        main()
    except Exception:
        reply({"error": traceback.format_exc()})
        raise

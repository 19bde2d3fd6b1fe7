"""Records a Dask cluster's real traffic: a LocalCluster (a scheduler and 2 worker
processes of 1 thread, over fastser://) runs the workloads of dask_workloads.py while
every process records the shape of each message its comms write (recorder.py). Writes
RECORDS/<pid>.jsonl and RECORDS/workloads.json (each workload's time window, for telling
which workload sent what); synthesize.py makes the corpus from them.

    python benchmarks/traffic/capture.py [--out RECORDS] [--scale S] [--only a,b]

--scale multiplies the array sides and row counts (default 0.5: a 10,000^2 array and
5 M rows, what a 2-core machine with 24 GiB runs in a few minutes; 1.0 is the
full size). Needs the dask extra and dask[array,dataframe] (with pyarrow for P2P).
"""

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "fastser-traffic"))
    parser.add_argument("--scale", type=float, default=0.5)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in os.listdir(args.out):
        if name.endswith(".jsonl"):
            os.remove(os.path.join(args.out, name))
    os.environ["FASTSER_TRAFFIC_DIR"] = args.out
    # The worker processes import recorder.py (and shapes.py beside it) as a preload.
    os.environ["PYTHONPATH"] = HERE + os.pathsep + os.environ.get("PYTHONPATH", "")

    import recorder  # this process too: the scheduler, the client and the nannies
    import dask_workloads
    from distributed import Client, LocalCluster

    chosen = [n for n in dask_workloads.WORKLOADS if not args.only or n in args.only.split(",")]
    windows = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      protocol="fastser://", host="127.0.0.1", dashboard_address=":0",
                      preload=[os.path.join(HERE, "recorder.py")]) as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(2, timeout=60)
        info = client.scheduler_info()
        for name in chosen:
            start = time.time()
            result = dask_workloads.WORKLOADS[name](client, args.scale)
            windows.append({"workload": name, "start": start, "stop": time.time(),
                            "result": repr(result)})
            print(f"{name:20s} {windows[-1]['stop'] - start:7.1f} s  result {result!r}",
                  flush=True)
            time.sleep(1.0)  # the batched streams drain: what they send stays in the window
        client.run(recorder.flush)
    recorder.flush()
    roles = {"scheduler": info["address"], "workers": sorted(info["workers"]),
             "nannies": sorted(w.get("nanny") for w in info["workers"].values())}
    with open(os.path.join(args.out, "workloads.json"), "w") as f:
        json.dump({"scale": args.scale, "windows": windows, "roles": roles}, f, indent=1)
    print(f"records in {args.out}")


if __name__ == "__main__":
    main()

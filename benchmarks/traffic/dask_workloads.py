"""Real Dask workloads, run by capture.py (to record their traffic) and by
benchmarks/cluster.py (to time them end to end on tcp:// and fastser://).

Each takes a Client and a scale (1.0: full size; smaller on a small machine:
array sides and row counts are multiplied by it, task and array counts are not) and
returns a small value that checks the computation ran.
"""

import math
from collections.abc import Callable
from typing import Any

MiB = 2**20


def array_side(scale: float) -> int:
    """The side of the square array: 20,000 at scale 1, in whole 1,000-chunks."""
    return max(2, round(20 * scale)) * 1000


def array_reduction(client: Any, scale: float) -> Any:
    """A dask.array reduction of a (20,000 x 20,000) random array in 1,000^2 chunks."""
    import dask.array as da
    side = array_side(scale)
    x = da.random.random((side, side), chunks=(1000, 1000))
    return float(client.compute(x.sum()).result())


def array_transpose(client: Any, scale: float) -> Any:
    """x + x.T, rechunked into rows of 500 (every output chunk needs others' data), summed."""
    import dask.array as da
    side = array_side(scale)
    x = da.random.random((side, side), chunks=(1000, 1000))
    y = (x + x.T).rechunk((500, side // 4))
    return float(client.compute(y.sum()).result())


def frame(scale: float) -> Any:
    """~10 M rows (at scale 1) of an id, a name and two floats, in 100 partitions."""
    import dask.array as da
    import dask.dataframe as dd
    rows = int(10_000_000 * scale)
    partitions = 100
    chunk = math.ceil(rows / partitions)
    ids = da.random.randint(0, 1000, size=rows, chunks=chunk)
    x = da.random.random(rows, chunks=chunk)
    y = da.random.random(rows, chunks=chunk)
    df = dd.concat([dd.from_dask_array(a, columns=name)
                    for a, name in ((ids, "id"), (x, "x"), (y, "y"))], axis=1)
    return df.assign(name=df.id.astype(str).str.slice(0, 2))


def groupby_aggregate(client: Any, scale: float) -> Any:
    """A dask.dataframe groupby-aggregate over ~10 M rows."""
    out = frame(scale).groupby("name").agg({"x": "sum", "y": "mean"})
    return len(client.compute(out).result())


def shuffle(method: str) -> Callable[[Any, float], Any]:
    def run(client: Any, scale: float) -> Any:
        df = frame(scale).shuffle("id", shuffle_method=method)
        return int(client.compute(df.x.sum()).result() > 0)
    run.__doc__ = f"A dask.dataframe shuffle on a column ({method}) over ~10 M rows."
    return run


def inc(x: int) -> int:
    return x + 1


def map_gather(client: Any, scale: float) -> Any:
    """client.map of 10,000 small tasks, then gather."""
    futures = client.map(inc, range(10_000), pure=False)
    total = sum(client.gather(futures))
    del futures
    return total


def scatter_arrays(client: Any, scale: float) -> Any:
    """client.scatter of 100 arrays of 1 MiB, then a sum of each on the workers."""
    import numpy as np
    arrays = [np.full(MiB // 8, float(i)) for i in range(100)]
    futures = client.scatter(arrays)
    total = sum(client.gather(client.map(np.sum, futures)))
    del futures
    return float(total)


WORKLOADS: dict[str, Callable[[Any, float], Any]] = {
    "array-reduction": array_reduction,
    "array-transpose": array_transpose,
    "groupby-aggregate": groupby_aggregate,
    "shuffle-p2p": shuffle("p2p"),
    "shuffle-tasks": shuffle("tasks"),
    "map-gather": map_gather,
    "scatter": scatter_arrays,
}

"""A pytest plugin for distributed's own tests (scripts/distributed_suite.sh): counts the
address schemes that distributed.comm.registry.get_backend is asked for in this process,
prints them at the end, and fails the run when the clusters were meant to be on fastser://
(DASK_DISTRIBUTED__COMM__DEFAULT_SCHEME=fastser) but no fastser backend was ever asked for.
With PEER_OUTCOMES set, writes there each test's outcome as JSON ("module::test":
passed | failed | skipped; a rerun test: its last run; module by its last name) for report.py.
Loaded with `-p count_schemes` from this folder; it changes no test.
"""

import json
import os
import sys
from collections import Counter
from typing import Any

import pytest

ASKED: Counter[str] = Counter()
NAMES: dict[str, str] = {}  # node id -> "module::test" (node ids lose the module here)
OUTCOMES: dict[str, str] = {}


def counting(get_backend: Any) -> Any:
    def get_backend_counted(scheme: str) -> Any:
        ASKED[scheme] += 1
        return get_backend(scheme)
    return get_backend_counted


def pytest_configure(config: pytest.Config) -> None:
    # distributed's modules import get_backend by name: each reference is replaced.
    import distributed.comm.registry as registry
    original = registry.get_backend
    counted = counting(original)
    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "")
        if name.startswith("distributed") and getattr(module, "get_backend", None) is original:
            setattr(module, "get_backend", counted)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        # The module's last name: pytest imports some of them as top-level modules.
        module = getattr(getattr(item, "module", None), "__name__", "?").rsplit(".", 1)[-1]
        NAMES[item.nodeid] = f"{module}::{item.name}"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    name = NAMES.get(report.nodeid, report.nodeid)
    if report.when == "setup":
        OUTCOMES[name] = "skipped" if report.skipped else ("failed" if report.failed else "passed")
    elif report.failed or (report.when == "call" and OUTCOMES.get(name) != "failed"):
        # xfail and xpass count as passed: distributed's marks say what they expect.
        OUTCOMES[name] = "failed" if report.failed else "passed"


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    asked = ", ".join(f"{scheme} {count}" for scheme, count in ASKED.most_common())
    import fastser
    terminalreporter.write_line(f"schemes asked of get_backend: {asked or 'none'}; "
                                f"fastser.COMPILED={getattr(fastser, 'COMPILED', None)}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    wanted = os.environ.get("DASK_DISTRIBUTED__COMM__DEFAULT_SCHEME", "tcp")
    if wanted == "fastser" and session.testscollected and not ASKED["fastser"]:
        print("\ncount_schemes: DASK_DISTRIBUTED__COMM__DEFAULT_SCHEME=fastser, but no fastser "
              "backend was asked for: the clusters did not use fastser://", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    path = os.environ.get("PEER_OUTCOMES")
    if path:
        with open(path, "w") as f:
            json.dump(OUTCOMES, f, indent=0, sort_keys=True)

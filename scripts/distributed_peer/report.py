"""Compares two runs of distributed's tests (scripts/distributed_suite.sh; the outcomes
count_schemes.py wrote): prints each scheme's pass/fail counts and every test that passes on
tcp:// but not on fastser://.
Exits 1 when such a test is not listed, with its reason, in tcp_only.txt beside this file.

    python report.py TCP_JSON FASTSER_JSON
"""

import json
import sys
from collections import Counter
from pathlib import Path

OUTCOMES = ("passed", "failed", "skipped")


def outcomes(path: Path) -> dict[str, str]:
    """test id -> passed | failed | skipped."""
    found: dict[str, str] = json.loads(path.read_text())
    return found


def expected_tcp_only() -> dict[str, str]:
    """tcp_only.txt: `test id  # reason`, one a line: tests no backend but tcp:// passes."""
    listed: dict[str, str] = {}
    for line in (Path(__file__).parent / "tcp_only.txt").read_text().splitlines():
        test, _, reason = line.partition("#")
        if test.strip():
            listed[test.strip()] = reason.strip()
    return listed


def main(tcp_run: str, fastser_run: str) -> int:
    runs = {"tcp": outcomes(Path(tcp_run)), "fastser": outcomes(Path(fastser_run))}
    for scheme, run in runs.items():
        counts = Counter(run.values())
        print(f"{scheme}://  " + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES))
    tcp, fastser = runs["tcp"], runs["fastser"]
    listed = expected_tcp_only()
    only_tcp = sorted(t for t, o in tcp.items() if o == "passed" and fastser.get(t) != "passed")
    only_fastser = sorted(t for t, o in fastser.items() if o == "passed" and tcp.get(t) != "passed")
    defects = [t for t in only_tcp if t not in listed]
    print(f"pass on tcp:// only: {len(only_tcp)} ({len(only_tcp) - len(defects)} listed in "
          f"tcp_only.txt)")
    for test in only_tcp:
        print(f"  {test}: {fastser.get(test, 'not run')}"
              + (f"  [listed: {listed[test]}]" if test in listed else "  [DEFECT]"))
    print(f"pass on fastser:// only: {len(only_fastser)}")
    for test in only_fastser:
        print(f"  {test}: tcp:// {tcp.get(test, 'not run')}")
    return 1 if defects else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))

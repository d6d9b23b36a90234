"""A pytest plugin: the whole machine's CPU per test file, for a run on one worker.

The suite is CPU-bound on two cores, and much of its CPU is spent outside pytest's own process
(the lab's sshd and emulators, the jobs, the ``cockpit`` commands the front-door tests start), so
``--durations`` (wall time) and a profile of the worker both miss it.  This reads the machine's
busy time from ``/proc/stat`` (every process) before each test's setup and after its teardown and
adds it to the test's file.  Run it alone on a quiet machine, on one worker (``-p no:xdist`` or
``COCKPIT_TEST_WORKERS=1``): with several workers, or anything else running, the figures mix.

Usage::

    python3 -m pytest -q -p bench.cpu_by_file -m "not lab and not e2e" -n 0
    python3 -m bench.cpu_by_file                  # the table, from cpu_by_file.json

``CPU_BY_FILE_OUT`` names the JSON file (default ``cpu_by_file.json`` in the working directory).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from typing import Any

_CPU: Counter[str] = Counter()
_WALL: Counter[str] = Counter()
_N: Counter[str] = Counter()
_STARTED: dict[str, tuple[float, float]] = {}


def busy_seconds() -> float:
    """Seconds every CPU of the machine spent busy since boot (``/proc/stat``, idle and iowait out)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def pytest_runtest_setup(item: Any) -> None:
    _STARTED[item.nodeid] = (busy_seconds(), time.monotonic())


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    started = _STARTED.pop(nodeid, None)
    if started is None:
        return
    f = nodeid.split("::")[0]
    _CPU[f] += busy_seconds() - started[0]
    _WALL[f] += time.monotonic() - started[1]
    _N[f] += 1


def pytest_sessionfinish(session: Any) -> None:
    out = os.environ.get("CPU_BY_FILE_OUT", "cpu_by_file.json")
    with open(out, "w") as fh:
        json.dump({f: {"cpu": round(_CPU[f], 2), "wall": round(_WALL[f], 2), "n": _N[f]} for f in _CPU}, fh, indent=1)


def main(argv: list[str]) -> None:
    with open(argv[0] if argv else os.environ.get("CPU_BY_FILE_OUT", "cpu_by_file.json")) as fh:
        data = json.load(fh)
    total = sum(v["cpu"] for v in data.values()) or 1.0
    print(f"{len(data)} files, {total:.0f} s of CPU")
    for f, v in sorted(data.items(), key=lambda kv: -kv[1]["cpu"])[:30]:
        print(f"{v['cpu']:7.1f} s  {v['cpu'] / total * 100:4.1f} %  {v['wall']:7.1f} s wall  {v['n']:4d} tests  {f}")


if __name__ == "__main__":
    main(sys.argv[1:])

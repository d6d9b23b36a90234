"""The cost of watching N targets on one host: 1, 4 and 16 lab containers, side by side.

For each N, a config with N ``[[targets]]`` (containers of the one lab host) is watched the way the
TUI's target strip watches them (:class:`cockpit.core.targets_poll.TargetsPoll`: every target's
quick status at once, on the host's shared SSH connection).  Per round it measures the wall time
(the strip's refresh time) and cockpit's own CPU time (this process: user + system), and it counts
the SSH connections sshd sees.  The baseline, measured in the same run, is N separate one-target
checks one after another, each with its own connection (what N cockpits, or a loop over configs,
would cost).

Usage: ``python bench/bench_targets.py [--rounds 5] [--quick]`` (root: the lab)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cockpit.core.config import load_config
from cockpit.core.status import collect_status  # noqa: E402
from cockpit.core.targets_poll import TargetsPoll  # noqa: E402
from tests.lab import Lab, faults  # noqa: E402  (faults: the lab sshd's connection count)

FIRST_CT = 300


def _config(lab: Lab, n: int, where: Path) -> Path:
    base = lab.config_toml(target={"name": None, "container": None})
    parts = [base]
    for i in range(n):
        parts.append(f"[[targets]]\nname = \"ct{FIRST_CT + i}\"\ncontainer = {FIRST_CT + i}\n")
    path = where / f"targets-{n}.toml"
    path.write_text("\n".join(parts))
    return path


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


async def _watched(lab: Lab, cfg_path: Path, rounds: int) -> tuple[float, float, int]:
    """(median wall s per round, median CPU s per round, SSH connections) for the strip's watch."""
    cfg = load_config(cfg_path)
    watch = TargetsPoll(cfg, cfg.selected or "", lambda _s: None)
    conns0 = len(faults.connections(lab))
    walls, cpus = [], []
    try:
        await watch.round()  # warm: the connection, the sessions
        for _ in range(rounds):
            c0, t0 = _cpu(), time.perf_counter()
            out = await watch.round()
            walls.append(time.perf_counter() - t0)
            cpus.append(_cpu() - c0)
            assert all(s.reachable for s in out), [(s.name, s.detail) for s in out if not s.reachable]
        conns = len(faults.connections(lab)) - conns0
    finally:
        await watch.close()
    return statistics.median(walls), statistics.median(cpus), conns


async def _separate(cfg_path: Path, rounds: int) -> tuple[float, float]:
    """N one-target checks one after another, each in its own event loop (its own connection)."""
    cfg = load_config(cfg_path)
    walls, cpus = [], []
    for _ in range(rounds):
        c0, t0 = _cpu(), time.perf_counter()
        for name in cfg.target_names:
            r = await asyncio.to_thread(asyncio.run, collect_status(cfg.for_target(name), quick=True))
            assert r["ok"], r["verdict"]
        walls.append(time.perf_counter() - t0)
        cpus.append(_cpu() - c0)
    return statistics.median(walls), statistics.median(cpus)


def measure(ns: list[int], rounds: int) -> list[dict[str, float]]:
    out = []
    with Lab() as lab, tempfile.TemporaryDirectory() as tmp:
        lab.start()
        for i in range(max(ns)):
            lab.add_container(FIRST_CT + i)
        for n in ns:
            path = _config(lab, n, Path(tmp))
            wall, cpu, conns = asyncio.run(_watched(lab, path, rounds))
            base_wall, base_cpu = asyncio.run(_separate(path, max(1, rounds // 2)))
            out.append({"n": n, "wall": wall, "cpu": cpu, "conns": conns, "base_wall": base_wall, "base_cpu": base_cpu})
    return out


def rows(quick: bool) -> list:  # for python -m bench
    from bench.common import Row

    res = measure([1, 4] if quick else [1, 4, 16], 2 if quick else 5)
    r = []
    for m in res:
        r.append(Row("targets", f"{m['n']} targets: one watch round (strip refresh)", m["wall"] * 1000, "ms",
                     m["base_wall"] * 1000, f"{m['n']} one-target checks in turn"))
        r.append(Row("targets", f"{m['n']} targets: cockpit CPU per round", m["cpu"] * 1000, "ms",
                     m["base_cpu"] * 1000, f"{m['n']} one-target checks in turn"))
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    ns = [1, 4] if a.quick else [1, 4, 16]
    res = measure(ns, 2 if a.quick else a.rounds)
    print(f"{'targets':>7} {'round wall':>11} {'CPU/round':>10} {'SSH conns':>9} │ {'baseline wall':>13} {'baseline CPU':>12} │ ratio wall")
    for m in res:
        print(f"{m['n']:>7} {m['wall'] * 1000:>9.0f}ms {m['cpu'] * 1000:>8.0f}ms {m['conns']:>9} │ "
              f"{m['base_wall'] * 1000:>11.0f}ms {m['base_cpu'] * 1000:>10.0f}ms │ {m['wall'] / m['base_wall']:.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())

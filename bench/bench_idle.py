"""What an idle cockpit costs: the TUI in tmux against the lab (real sshd, container 200, the GPU
emulator), default refresh, nobody pressing keys, the job running and quiet.

Measured in the same run: the TUI process's CPU (user + system, % of one core) over a quiet window
after a warm-up, its RSS at both ends, and the remote processes its probes start per minute
(new pids under the container's namespace and the host's shells, counted from ``/proc``).  The
baseline is the same TUI with ``[ui] refresh_interval`` raised to 60 s (what the frame, clock and
timers cost with almost no probing), measured right after.

    python bench/bench_idle.py [--seconds 30] [--warm 8] [--profile out.svg]

``--profile`` records the quiet window with py-spy (when installed) as a flame graph.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.tui_target import CLK_TCK, READY_MARK, cpu_ticks, rss_kib, start_tui, wait_for  # noqa: E402
from tests.lab import Lab  # noqa: E402

JOB = "python3 -u -c 'import time\nwhile True: time.sleep(1)'"
#: ``--following``: a training job that prints a step a second (followed by cockpit after its attempt passed)
STEPS = "python3 -u -c 'import time, itertools\nfor i in itertools.count(1): print(f\"step {i} | loss {2 - i / 1e5:.4f}\", flush=True); time.sleep(1)'"


def pids_started(seconds: float) -> float:
    """How many pids the system handed out per minute over ``seconds`` (ns_last_pid moves with each
    fork anywhere; the machine's own background is measured beside it as the baseline's)."""
    try:
        a = int(Path("/proc/sys/kernel/ns_last_pid").read_text())
        time.sleep(seconds)
        b = int(Path("/proc/sys/kernel/ns_last_pid").read_text())
        return (b - a) * 60 / seconds
    except OSError:
        return float("nan")


class Tui:
    """One TUI in tmux against the lab, at one refresh interval."""

    def __init__(self, lab: Lab, root: Path, interval: float, following: bool, poll: bool = False) -> None:
        self.cfg = lab.write_config(root / f"cockpit-{interval:g}.toml", job={"command": STEPS if following else JOB},
                                    ui={"refresh_interval": interval}, **({"gpu": {"stream": False}} if poll else {}),
                                    verify={"settle": 2.0 if following else None, "fate_interval": None})
        if following:  # an attempt that passes first: the TUI then follows its job (fate) and its log
            (lab.dir / "src").mkdir(exist_ok=True)
            (lab.dir / "src" / "train.py").write_text("print('the code under test')\n")
            env0 = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
            r = subprocess.run([sys.executable, "-m", "cockpit", "attempt", "-c", str(self.cfg), "-m", "idle bench"], env=env0,
                               capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                raise RuntimeError(f"the attempt did not pass: {r.stdout[-500:]} {r.stderr[-500:]}")
        self.tmux, self.env, self.pid, _ = start_tui(root, self.cfg, 120, 40, sock_prefix=f"idle{int(interval)}")

    def ready(self) -> None:
        wait_for(lambda: READY_MARK in self.tmux.capture(), 30, "the first frame")

    def launch(self) -> None:
        subprocess.run([sys.executable, "-m", "cockpit", "launch", "-c", str(self.cfg)], env=self.env, capture_output=True, timeout=60)

    def close(self, stop_job: bool = True) -> None:
        self.tmux.kill()
        if stop_job:
            subprocess.run([sys.executable, "-m", "cockpit", "stop", "-c", str(self.cfg)], env=self.env, capture_output=True, timeout=60)


def window(tuis: list[Tui], seconds: float, profile: str | None) -> list[dict[str, float]]:
    """Each TUI's CPU and RSS over the same quiet window of ``seconds`` (and the machine's forks)."""
    t0 = time.monotonic()
    start = [(cpu_ticks(t.pid, children=True), rss_kib(t.pid)) for t in tuis]
    spy = None
    if profile and shutil.which("py-spy"):
        spy = subprocess.Popen(["py-spy", "record", "-p", str(tuis[0].pid), "-d", str(int(seconds)), "-o", profile, "-r", "200"]
                               + (["--format", "raw"] if profile.endswith(".txt") else []),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    forks = pids_started(seconds)
    end = [(cpu_ticks(t.pid, children=True), rss_kib(t.pid)) for t in tuis]
    dt = time.monotonic() - t0
    if spy is not None:
        spy.wait(timeout=60)
    return [{"cpu_pct": 100.0 * ((c1 or 0) - (c0 or 0)) / CLK_TCK / dt, "rss0_mib": (r0 or 0) / 1024,
             "rss1_mib": (r1 or 0) / 1024, "forks_per_min": forks} for (c0, r0), (c1, r1) in zip(start, end, strict=True)]


def measure(lab: Lab, root: Path, interval: float, seconds: float, warm: float, profile: str | None,
            following: bool = False, poll: bool = False) -> dict[str, float]:
    tui = Tui(lab, root, interval, following, poll)
    try:
        tui.ready()
        if not following:
            tui.launch()
        time.sleep(warm)  # warm-up: imports done, first refreshes drawn, the kernel-log stream up
        return window([tui], seconds, profile)[0]
    finally:
        tui.close()


def run(seconds: float, warm: float, interval: float | None = None, profile: str | None = None,
        following: bool = False, together: bool = False, poll: bool = False) -> tuple[float, dict[str, float], dict[str, float]]:
    """(interval, figures at that refresh, figures at 60 s: the baseline), measured in one lab.

    ``together``: both TUIs run at once over the same window (half the time, and both see the same
    machine: what ``python -m bench --quick`` uses while other benchmarks run beside it); the
    machine's fork count is then theirs together.
    """
    from cockpit.core.config.sections import UIConfig

    interval = interval or UIConfig().refresh_interval
    root = Path(tempfile.mkdtemp(prefix="cockpit-idle-"))
    try:
        with Lab() as lab:
            lab.add_container(200)
            if not together:
                now = measure(lab, root, interval, seconds, warm, profile, following, poll)
                base = measure(lab, root, 60.0, seconds, warm, None, following, poll)
                return interval, now, base
            tuis = [Tui(lab, root, interval, following), Tui(lab, root, 60.0, False)]
            try:
                for t in tuis:
                    t.ready()
                if not following:
                    tuis[0].launch()
                time.sleep(warm)  # warm-up: imports done, first refreshes drawn, the kernel-log stream up
                now, base = window(tuis, seconds, profile)
            finally:
                tuis[1].close(stop_job=False)
                tuis[0].close()
            return interval, now, base
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--warm", type=float, default=8)
    ap.add_argument("--interval", type=float, default=None, help="refresh interval (default: the config default)")
    ap.add_argument("--profile")
    ap.add_argument("--following", action="store_true", help="a job that logs a step a second, followed after its attempt passed")
    ap.add_argument("--poll", action="store_true", help="the GPUs polled every refresh ([gpu] stream = false), as where nvidia-smi cannot stream")
    a = ap.parse_args()
    interval, now, base = run(a.seconds, a.warm, a.interval, a.profile, a.following, poll=a.poll)
    print(f"TUI idle against the lab, {a.seconds:g} s quiet window after {a.warm:g} s warm-up")
    print(f"{'':<34}{'refresh ' + format(interval, 'g') + ' s':>16}{'refresh 60 s':>16}")
    print(f"{'CPU, % of one core':<34}{now['cpu_pct']:>16.2f}{base['cpu_pct']:>16.2f}")
    print(f"{'RSS start → end, MiB':<34}{now['rss0_mib']:>7.1f} → {now['rss1_mib']:<6.1f}{base['rss0_mib']:>7.1f} → {base['rss1_mib']:<6.1f}")
    print(f"{'pids started on the machine /min':<34}{now['forks_per_min']:>16.0f}{base['forks_per_min']:>16.0f}")


if __name__ == "__main__":
    main()

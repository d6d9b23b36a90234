"""The built-in demo: a real FX/dynamo race that crashes, a shipped fix that makes it train,
a simulated nvidia-smi that follows the job, and the whole loop through the engine.

No fixed sleeps: every wait is a condition polled under a deadline.
"""

from __future__ import annotations

import csv
import io
import json
import os
import queue
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cockpit.demo import (
    BASELINE_NOTE,
    FIX_NOTE,
    PROJECT_DIR,
    apply_fix,
    demo_config,
    demo_paths,
    fix_applied,
    fix_diff,
    install_nvidia_smi,
    reset_demo,
    unapply_fix,
)
from tests.lab.util import wait_for

FX_ERROR = (
    "RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized function. "
    "This is not supported at the moment."
)
NINE_FIELDS = "index,name,uuid,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw,pstate"


def project_copy(tmp_path: Path, name: str = "project") -> Path:
    dest = tmp_path / name
    shutil.copytree(PROJECT_DIR, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def job_env(tmp_path: Path, name: str = "job") -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / f"{name}-inductor"),
        "COCKPIT_DEMO_GPU_STATE": str(tmp_path / f"{name}-gpu.json"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    })
    return env


class LineReader:
    """Reads a child's merged output on a thread; tests wait for lines with a deadline."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.lines: list[str] = []
        self._q: queue.Queue[str | None] = queue.Queue()
        self._t = threading.Thread(target=self._run, args=(proc,), daemon=True)
        self._t.start()

    def _run(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            self._q.put(raw.decode("utf-8", "replace").rstrip("\n"))
        self._q.put(None)

    def wait_line(self, pred, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                so_far = "\n".join(self.lines[-30:])
                raise AssertionError(f"no matching line within {timeout:g}s; output so far:\n{so_far}")
            try:
                line = self._q.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError("the job ended first; output:\n" + "\n".join(self.lines[-30:]))
            self.lines.append(line)
            if pred(line):
                return line

    def rest(self, timeout: float) -> list[str]:
        self._t.join(timeout)
        while True:
            try:
                line = self._q.get_nowait()
            except queue.Empty:
                return self.lines
            if line is not None:
                self.lines.append(line)


def smi(path: Path, *args: str, state: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if state is not None:
        env["COCKPIT_DEMO_GPU_STATE"] = str(state)
    return subprocess.run([str(path), *args], capture_output=True, text=True, timeout=10, env=env)


# -- (a) the unfixed job crashes, every time ------------------------------------------------------------


def test_unfixed_job_dies_with_the_fx_race(tmp_path):
    src = project_copy(tmp_path)
    # three at once: the race must not depend on a quiet machine
    procs = [
        subprocess.Popen([sys.executable, "train.py"], cwd=src, env=job_env(tmp_path, f"run{i}"),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for i in range(3)
    ]
    for i, p in enumerate(procs):
        out, _ = p.communicate(timeout=30)
        text = out.decode()
        assert p.returncode == 1, text
        assert "Exception in thread drafter-" in text, text
        assert FX_ERROR in text
        lines = text.splitlines()
        # each thread's report is whole: header, frames in minitorch, the FX error as its last line
        starts = [n for n, line in enumerate(lines) if line.startswith("Exception in thread drafter-")]
        for n in starts:
            block = lines[n:n + 40]
            end = next(k for k, line in enumerate(block) if not line.startswith(("Exception in", "Traceback", "  ")))
            assert block[1] == "Traceback (most recent call last):"
            assert block[end] == FX_ERROR, "\n".join(block)
            frames = "\n".join(block[:end])
            assert "minitorch/_dynamo/eval_frame.py" in frames and "in _fn" in frames
            assert "drafter.py" in frames and "in compile_drafter" in frames
        assert "died; stopping the run (exit 1)" in lines[-1]
        # it compiled something before dying: clear-cache has work to do
        assert any((tmp_path / f"run{i}-inductor").rglob("f*")), "no compiled graph in the inductor cache"
        assert not (tmp_path / f"run{i}-gpu.json").exists(), "a dead job must not leave the GPU busy"


# -- (b) with the fix it trains --------------------------------------------------------------------------


def test_fixed_job_trains_until_stopped(tmp_path):
    src = project_copy(tmp_path)
    changed = apply_fix(src)
    assert [p.name for p in changed] == ["drafter.py"]
    env = job_env(tmp_path)
    state = Path(env["COCKPIT_DEMO_GPU_STATE"])
    proc = subprocess.Popen([sys.executable, "train.py"], cwd=src, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = LineReader(proc)
    try:
        t0 = time.monotonic()
        first = out.wait_line(lambda line: line.startswith("step 1 "), timeout=15)
        started = time.monotonic() - t0
        fifth = out.wait_line(lambda line: line.startswith("step 5 "), timeout=5)
        for line in (first, fifth):
            f = line.split()
            assert f[2] == "loss" and f[4] == "lr", line
        assert float(fifth.split()[3]) < float(first.split()[3]), "loss should go down"
        assert not any("Exception in thread" in line for line in out.lines)
        gpu = json.loads(state.read_text())
        assert gpu["pid"] == proc.pid and gpu["phase"] == "training" and gpu["utilization_gpu"] >= 90
        assert started < 10, f"first step after {started:.1f}s"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)  # its threads finish their step first: slow on a loaded 2-core machine
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    assert any("SIGTERM: stopping at step" in line for line in out.rest(5))
    assert not state.exists()


# -- (c) the simulated nvidia-smi ------------------------------------------------------------------------


def test_simulated_nvidia_smi_follows_the_job(tmp_path):
    paths = demo_paths(tmp_path / "home")
    exe = install_nvidia_smi(paths)
    assert os.access(exe, os.X_OK)
    state = paths.gpu_state
    state.parent.mkdir(parents=True)

    def query(kind: str, fields: str) -> list[list[str]]:
        r = smi(exe, f"--query-{kind}={fields}", "--format=csv,noheader,nounits")
        assert r.returncode == 0, r.stdout + r.stderr
        return [[c.strip() for c in row] for row in csv.reader(io.StringIO(r.stdout)) if row]

    # idle: no job has written a state
    (row,) = query("gpu", NINE_FIELDS)
    assert len(row) == 9
    assert row[1] == "NVIDIA A100-SXM4-80GB" and row[2].startswith("GPU-")
    assert (int(row[3]), int(row[4]), int(row[5])) == (0, 0, 81920)
    float(row[7])
    assert query("compute-apps", "pid,process_name,used_memory,gpu_uuid") == []

    # a live process (this one) says it trains
    state.write_text(json.dumps({"pid": os.getpid(), "process_name": sys.executable, "phase": "training",
                                 "utilization_gpu": 95, "memory_used_mib": 62208, "updated": time.time() + 3600}))
    (row,) = query("gpu", NINE_FIELDS)
    assert len(row) == 9 and 90 <= int(row[3]) <= 100 and int(row[4]) >= 60 * 1024
    assert float(row[7]) > 200
    (app,) = query("compute-apps", "pid,process_name,used_memory,gpu_uuid")
    assert app == [str(os.getpid()), sys.executable, "62208", row[2]]

    # with units and a header, like the real tool
    r = smi(exe, "--query-gpu=utilization.gpu,memory.used", "--format=csv")
    header, values = r.stdout.splitlines()
    assert header == "utilization.gpu [%], memory.used [MiB]"
    assert values.endswith(" MiB") and " %," in values
    assert smi(exe, "-L").stdout.startswith("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-")
    assert re.search(r"62208MiB /\s+81920MiB .* 9\d%", smi(exe).stdout)
    bad = smi(exe, "--query-gpu=bogus", "--format=csv")
    assert bad.returncode == 2 and 'Field "bogus" is not a valid field to query.' in bad.stdout

    # the probe cockpit itself runs parses it
    from cockpit.core.probes.gpu import gpu_query_command, parse_gpu_output

    r = subprocess.run(["/bin/sh", "-c", gpu_query_command(str(exe))], capture_output=True, text=True, timeout=20)
    snap = parse_gpu_output(r.stdout, r.stderr, r.returncode)
    assert snap.ok, snap.error
    assert [g.name for g in snap.gpus] == ["NVIDIA A100-SXM4-80GB"]
    assert snap.gpus[0].utilization_pct >= 90
    assert [p.pid for p in snap.processes] == [os.getpid()]

    # the job is gone: the GPU is idle again (a reaped child's pid is dead)
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    state.write_text(json.dumps({"pid": int(child.stdout), "utilization_gpu": 95, "memory_used_mib": 62208, "updated": time.time()}))
    (row,) = query("gpu", NINE_FIELDS)
    assert (int(row[3]), int(row[4])) == (0, 0)
    assert query("compute-apps", "pid,process_name,used_memory,gpu_uuid") == []


# -- the demo's home and config -------------------------------------------------------------------------


def test_demo_config_prepares_home_and_validates():
    cfg = demo_config()
    p = demo_paths()
    assert str(p.home).startswith(os.environ["XDG_CACHE_HOME"])
    assert (cfg.target.name, cfg.target.transport, cfg.target.runtime) == ("demo", "local", "none")
    assert cfg.job.workdir == str(p.workspace) and cfg.deploy.dest == str(p.workspace)
    assert cfg.deploy.source == str(p.src) and (p.src / "train.py").is_file()
    assert shlex.split(cfg.job.command) == [sys.executable, "train.py"]
    assert cfg.job.log == str(p.workspace / "logs" / "train-{attempt}.log")
    assert cfg.job.launcher == "setsid"  # never systemd-run: that needs root
    assert (cfg.job.progress_pattern, cfg.job.startup_timeout, cfg.job.healthy_after, cfg.job.stop_timeout) == (r"^step \d+", 30, 10, 3)
    assert cfg.cache.paths == [str(p.cache)]
    assert cfg.job.env["TORCHINDUCTOR_CACHE_DIR"] == str(p.cache)
    assert cfg.job.env["COCKPIT_DEMO_GPU_STATE"] == str(p.gpu_state)
    assert cfg.gpu.nvidia_smi == str(p.nvidia_smi) and os.access(p.nvidia_smi, os.X_OK)
    assert cfg.journal_path == p.journal and cfg.path is None


def test_working_copy_is_kept_and_the_fix_applies_and_resets():
    demo_config()
    src = demo_paths().src
    train = src / "train.py"
    train.write_text(train.read_text() + "\n# my edit\n")
    demo_config()
    assert train.read_text().endswith("# my edit\n"), "a later run must not overwrite the user's edits"

    assert not fix_applied()
    diff = fix_diff()
    assert "-COMPILE_GUARD = contextlib.nullcontext()" in diff and "+COMPILE_GUARD = threading.Lock()" in diff
    assert [p.name for p in apply_fix()] == ["drafter.py"]
    assert fix_applied() and fix_diff() == "" and apply_fix() == []
    assert [p.name for p in unapply_fix()] == ["drafter.py"]
    assert not fix_applied()

    apply_fix()
    assert reset_demo() == src
    assert not fix_applied() and "# my edit" not in train.read_text()
    assert train.read_bytes() == (PROJECT_DIR / "train.py").read_bytes()


def test_demo_files_are_package_data():
    """pyproject's package-data globs ship the project, the fix and the nvidia-smi source."""
    import glob

    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    root = Path(__file__).resolve().parents[1]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["cockpit"]
    pkg = root / "cockpit"
    shipped = {os.path.normpath(f) for pat in patterns for f in glob.glob(pat, root_dir=pkg, recursive=True)}
    demo_dir = pkg / "demo"
    wanted = [str(p.relative_to(pkg)) for p in demo_dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert "demo/project/minitorch/_dynamo/eval_frame.py" in wanted and "demo/fix/drafter.py" in wanted
    missing = [w for w in wanted if w not in shipped]
    assert not missing, f"not covered by [tool.setuptools.package-data]: {missing}"


# -- (d) the whole loop through the engine --------------------------------------------------------------


async def test_demo_loop_fails_then_passes_with_the_fix():
    pytest.importorskip("cockpit.core.probes.signatures")
    from cockpit.core.engine import Engine
    from cockpit.core.layers import Layer, Outcome

    cfg = demo_config()
    engine = Engine(cfg)
    try:
        first = await engine.attempt(BASELINE_NOTE)
        assert first.outcome is Outcome.FAILED, first.verdict.summary()
        assert first.verdict.layer is Layer.APP
        assert "using FX to symbolically trace" in json.dumps(first.first_error)
        log1 = Path(cfg.log_path(first.attempt))
        assert "Exception in thread drafter-" in log1.read_text()

        apply_fix()
        second = await engine.attempt(FIX_NOTE)
        assert second.outcome is Outcome.PASSED, second.verdict.summary()
        assert second.verdict.layer is None

        # while it trains, the demo GPU is busy with the job
        def busy():
            r = smi(Path(cfg.gpu.nvidia_smi), "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits")
            util, mem = (int(x) for x in r.stdout.split(","))
            return util >= 90 and mem > 60 * 1024

        wait_for(busy, 10, "the simulated GPU to show the training job")

        history = engine.journal.attempts()
        assert [(a.note, a.outcome) for a in history] == [(BASELINE_NOTE, Outcome.FAILED), (FIX_NOTE, Outcome.PASSED)]
        assert history[0].layer is Layer.APP
        v1, v2 = history[0].code_version, history[1].code_version
        if v1 and v1.get("git_commit"):  # the working copy is a git repository when git is installed
            assert not v1["dirty"] and v2["dirty"] and v1["git_commit"] == v2["git_commit"]
    finally:
        await engine.run_action("stop")
        await engine.close()
    r = smi(Path(cfg.gpu.nvidia_smi), "--query-compute-apps=pid", "--format=csv,noheader,nounits")
    assert r.stdout.strip() == "", "the stopped job still shows on the GPU"

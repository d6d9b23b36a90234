"""Helpers shared by the UI tests (no tests here): configs, engines, a deterministic app state,
and waiting on conditions with a deadline (never a fixed sleep)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cockpit.core.config import parse_config
from tests.lab.util import await_for

FIXTURES = Path(__file__).parent / "fixtures"

#: the fixed "now" of the deterministic snapshots: 2024-12-02 09:00:00 UTC
FIXED = 1733130000.0


async def wait_for(pilot: Any, pred: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Let the app run until ``pred()`` holds; fail after ``timeout`` seconds (``await_for``, pausing the pilot)."""
    await await_for(pred, timeout, what, interval=0.02, pause=pilot.pause)


def local_config(tmp: Path, *, runtime: str = "none", extra: str = "", gpu: bool = False, command: str = "/bin/true"):
    """A local-transport config rooted in ``tmp`` (nothing leaves the test's directory)."""
    ct = 'container = 200\npct = "/nonexistent/pct"\n' if runtime == "pct" else ""
    text = f"""
[target]
name = "lab"
transport = "local"
runtime = "{runtime}"
{ct}
[job]
workdir = "{tmp}"
command = "{command}"
log = "{tmp}/logs/train-{{attempt}}.log"
stop_timeout = 1
[journal]
path = "{tmp}/journal.jsonl"
[gpu]
enabled = {"true" if gpu else "false"}
[ui]
refresh_interval = 1
{extra}
"""
    return parse_config(text)


def make_engine(cfg: Any) -> Any:
    from cockpit.core.engine import Engine

    return Engine(cfg)


def framed_log(data: bytes, inode: str = "42") -> bytes:
    """What the log probe prints for a file holding ``data`` read from offset 0."""
    return f"@@cockpit-log ok {inode} {len(data)} 0 {len(data)}\n".encode() + data + b"\n@@cockpit-log end\n"


# -- the deterministic state used by the snapshots --------------------------------------------------

def _stage(name: str, status: str, layer: str, detail: str = "", **kw: Any) -> dict[str, Any]:
    return {"name": name, "status": status, "layer": layer, "detail": detail, "started_at": FIXED, "duration_s": 0.1, **kw}


def _connect(ok: bool = True) -> list[dict[str, Any]]:
    return [
        _stage("ssh reached", "ok", "ssh", "connected to root@10.1.2.6 pct 200"),
        _stage("host answers", "ok", "host", "pct status 200: running"),
        _stage("target shell answers", "ok", "container", "shell in pct 200 answers"),
        _stage("workdir exists", "ok", "container", "/workspace exists and is writable"),
    ]


FX_ERROR = {
    "layer": "app", "kind": "fx-dynamo-race", "label": "FX traced a dynamo-optimized function",
    "summary": "FX traced a dynamo-optimized function (thread drafter-0)",
    "advice": "Compile once before the threads start, or keep torch.compile out of worker threads.",
    "line": "RuntimeError: Detected that you are using FX to symbolically trace", "line_no": 24, "thread": "drafter-0",
    "traceback": ["Exception in thread drafter-0:", "Traceback (most recent call last):",
                  '  File "/workspace/drafter.py", line 188, in forward',
                  "RuntimeError: Detected that you are using FX to symbolically trace"],
}


def write_story_journal(path: Path) -> None:
    """Three attempts of the seed story, at fixed times: failed (app), untested (container),
    untested (process)."""
    events: list[dict[str, Any]] = []

    def ev(attempt: int, t: float, event: str, **fields: Any) -> None:
        events.append({"v": 1, "ts": FIXED - 3600 + t, "event": event, "attempt": attempt, **fields})

    cv = {"git_commit": "4092e570316bcb02aa", "dirty": True, "dirty_hash": "5c1e9a0b77d2", "files": 12, "source": "/src"}
    # 1: the FX race: the code ran and failed
    ev(1, 0, "attempt_started", note="serialise the first compile with _exec_lock", target="pve-gpu", code_version=cv,
       log_path="/workspace/.cockpit/train-1.log")
    ev(1, 60, "verdict", action="verify", verdict={"action": "attempt", "started_at": FIXED, "stages": _connect() + [
        _stage("deploy: checksums", "ok", "container", "all 12 files match"),
        _stage("launch: spawn", "ok", "process", "pid 91380, process group 91380"),
        _stage("verify: alive", "fail", "app", "exited with code 1: RuntimeError: Detected that you are using FX …",
               advice=FX_ERROR["advice"]),
        _stage("verify: progress", "not reached", "app", "not reached: an earlier stage failed"),
    ]})
    ev(1, 61, "job", pid=91380, pgid=91380, start_time=123, log_path="/workspace/.cockpit/train-1.log")
    ev(1, 62, "attempt_finished", outcome="failed", layer="app", summary="attempt: app failed at verify: alive",
       first_error=FX_ERROR, duration_s=62.0)
    # 2: a zombie the container's PID 1 never reaps: the fix never ran
    ev(2, 600, "attempt_started", note="module-level shim for torch.fx._symbolic_trace", target="pve-gpu",
       code_version={**cv, "dirty_hash": "77aa01c3e9f0"}, log_path="/workspace/.cockpit/train-2.log")
    ev(2, 640, "verdict", action="attempt", verdict={"action": "attempt", "started_at": FIXED, "stages": _connect() + [
        _stage("stop: terminate", "ok", "process", "stopped with KILL after 10s of TERM"),
        _stage("stop: nothing left", "fail", "container",
               "pid 91451 (python3) is a zombie (Zl), parent 1 (systemd) has not reaped it", advice="reboot the container"),
        _stage("launch: spawn", "not reached", "process", "not reached: an earlier stage failed"),
    ]})
    ev(2, 641, "attempt_finished", outcome="untested", layer="container",
       summary="attempt: container failed at stop: nothing left", first_error=None, duration_s=41.0)
    # 3: the log never appeared: the fix never ran
    ev(3, 1200, "attempt_started", note="patch is_fx_symbolic_tracing() directly", target="pve-gpu",
       code_version={**cv, "dirty_hash": "e1f00d2b3c4a"}, log_path="/workspace/train_tl3.log")
    ev(3, 1260, "verdict", action="attempt", verdict={"action": "attempt", "started_at": FIXED, "stages": _connect() + [
        _stage("deploy: checksums", "ok", "container", "all 12 files match"),
        _stage("clear-cache: gone", "ok", "container", "all cache paths are gone"),
        _stage("stop: identify job", "skipped", "process", "job already exited"),
        _stage("launch: spawn", "ok", "process", "pid 91502, process group 91502"),
        _stage("verify: spawned", "ok", "process", "pid 91502"),
        _stage("verify: log created", "fail", "process", "/workspace/train_tl3.log not created within 30s"),
        _stage("verify: log growing", "not reached", "process", "not reached: an earlier stage failed"),
    ]})
    ev(3, 1261, "attempt_finished", outcome="untested", layer="process",
       summary="attempt: process failed at verify: log created", first_error=None, duration_s=61.0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def story_app(tmp: Path, **kw: Any) -> Any:
    """An app showing the seed story at a fixed time: seed process table (the Zl zombie), four
    H100s with memory held by the zombie, the FX-race log, three attempts.  Nothing refreshes."""
    from cockpit.core.observe import GPUView, ProcsView
    from cockpit.core.probes import gpu as gpu_probe
    from cockpit.core.probes import procs as procs_probe
    from cockpit.ui.app import create_app

    cfg = parse_config(f"""
[target]
name = "pve-gpu"
host = "10.1.2.6"
user = "root"
runtime = "pct"
container = 200
[job]
workdir = "/workspace"
command = "/usr/bin/python3 train_tl.py"
log = "/workspace/.cockpit/train-{{attempt}}.log"
[journal]
path = "{tmp}/journal.jsonl"
""")
    write_story_journal(tmp / "journal.jsonl")
    engine = make_engine(cfg)
    # the story's host (10.1.2.6) does not exist here: nothing may reach for it.  The app follows the
    # latest job's fate at start; that follower, left connecting when a snapshot's app exited, held
    # the event loop's last cancellation for two minutes on a loaded machine.
    engine.resume_following = lambda: None
    obs = engine.observer
    procs, _ = procs_probe.parse_ps((FIXTURES / "procs" / "procs_seed_systemd.txt").read_text())
    findings = procs_probe.analyse(procs, job_pids={91380}, job_pgid=91380, job_command=cfg.job.command)
    obs.procs = ProcsView(collected_at=FIXED, procs=procs, findings=findings, job_pids={91380})
    snap = gpu_probe.parse_gpu_output((FIXTURES / "gpu" / "h100x4_550_ok.txt").read_text(), "", 0, collected_at=FIXED)
    snap.findings.extend(gpu_probe.unaccounted_memory(snap, {48213, 48290}, {91451}))
    obs.gpu = GPUView(collected_at=FIXED, snapshot=snap)
    obs.follow("/workspace/.cockpit/train-1.log")
    obs.log.follower.apply(framed_log((FIXTURES / "logs" / "seed_fx_threads.log").read_bytes()), FIXED)
    obs.log.collected_at = FIXED
    kw.setdefault("clock", lambda: FIXED + 4)
    return create_app(cfg, engine=engine, refresh=False, **kw)

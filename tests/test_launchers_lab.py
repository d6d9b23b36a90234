"""A launcher that exits is not the job's end, against the lab: real sshd, emulated pct, real processes.

``[job] command = "sh launcher_launch.sh …"``: the wrapper starts ``nohup python3
launcher_train.py … &`` and exits 0 at once, the trainer writing on into the same log (the shape of
cluster wrappers and of torchrun's agent).  Before, the attempt read ``untested (process)``
("exited with code 0") and the fate ``finished`` while the trainer was still training.  Now the
trainer, still in the job's process group, is the job: the verdict names the launcher's exit and
the trainer's pid, the fate stays ``running`` while it lives and ends ``finished`` (or ``died
(app)`` with its traceback) after it, saying its exit status was not observed; ``stop`` stops it.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Outcome, Status
from cockpit.core.status import collect_status
from tests.lab import await_for
from tests.lab.runs import JOBS, fate_of

pytestmark = pytest.mark.lab


CT = 200


def launcher_config(lab: Any, lab_config: Any, tmp_path: Path, mode: str, steps: int, *, host: bool = False, own_group: bool = False) -> Any:
    """A config whose command is the wrapper; the scripts are copied into the job's workdir (the
    container's workspace, the same path inside and outside)."""
    work = Path(lab.workspace(CT)) / ("launcher-host" if host else "launcher")
    work.mkdir(parents=True, exist_ok=True)
    for name in ("launcher_launch.sh", "launcher_train.py"):
        shutil.copy(JOBS / name, work / name)
    python = lab.jobsim_argv()[0]
    argv = ["sh", "launcher_launch.sh", python, mode, str(steps), "0.1"] + (["own-group"] if own_group else [])
    job = {"command": shlex.join(argv), "workdir": str(work),
           "log": f"{work}/train-{{attempt}}.log", "stop_timeout": 3, "dump_before_stop": False}
    over: dict[str, Any] = {"job": job, "verify": {"settle": 1.0, "fate_interval": 0.3},
                            "journal": {"path": str(tmp_path / "journal.jsonl")}}
    if host:
        over.update(target={"name": "lab-host", "runtime": "none", "container": None}, gpu=None)
    return lab_config(**over)


def trainer_pid(lab: Any, log_path: str, host: bool) -> int:
    text = Path(log_path).read_text() if host else lab.exec_in(CT, f"cat {shlex.quote(log_path)}").stdout
    m = re.search(r"^trainer pid (\d+):", text, re.M)
    assert m, text
    return int(m.group(1))


def alive_in_target(lab: Any, pid: int, host: bool) -> bool:
    if host:
        return Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]
    r = lab.exec_in(CT, f"s=$(cat /proc/{pid}/stat 2>/dev/null) && case \"${{s##*) }}\" in Z*) exit 1;; esac")
    return r.returncode == 0


def alive_stage(verdict: Any) -> Any:
    return next(s for s in verdict.stages if s.name.endswith("alive"))


async def passed_with_trainer(lab: Any, cfg: Any, eng: Any, mode: str, host: bool = False) -> tuple[Any, int]:
    """The attempt passes while the launcher is long gone, and names the launcher's exit and the trainer."""
    res = await eng.attempt(f"through a launcher ({mode})")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    pid = trainer_pid(lab, res.job.log_path, host)
    al = alive_stage(res.verdict)
    assert al.status is Status.OK, al.detail
    assert f"launcher exited 0; trainer pid {pid} (python3 launcher_train.py {mode} " in al.detail, al.detail
    assert al.detail.endswith("threads") and "continues" in al.detail, al.detail
    assert res.job.survivor_pid == pid and res.job.launcher_exit == 0  # the record learned the trainer
    assert alive_in_target(lab, pid, host)
    f = await await_for(lambda: fate_of(cfg, res.attempt), timeout=10, interval=0.1)
    assert f.state == "running" and f"trainer pid {pid}" in f.cause, f  # while it trains, it runs
    assert alive_in_target(lab, pid, host)
    return res, pid


def final(cfg: Any, attempt: int) -> Any:
    f = fate_of(cfg, attempt)
    return f if f is not None and f.final else None


@pytest.mark.parametrize("runtime", ["pct", "host"])
async def test_the_trainer_a_launcher_left_is_the_job_until_it_ends(lab, lab_config, engines, tmp_path, runtime):
    host = runtime == "host"
    cfg = launcher_config(lab, lab_config, tmp_path, "ok", 35, host=host)  # 3.5 s of training after the wrapper left
    eng = engines(cfg)
    res, pid = await passed_with_trainer(lab, cfg, eng, "ok", host)
    f = await await_for(lambda: final(cfg, res.attempt), timeout=20, interval=0.1)
    assert not alive_in_target(lab, pid, host)
    assert f.state == "finished" and f.layer is None, f
    assert f"launcher exited 0; the trainer pid {pid} (python3 launcher_train.py ok 35 0.1) ended with no error in its log" in f.cause, f.cause
    assert "its exit status was not observed (its launcher exited first)" in f.cause, f.cause
    assert f.last_progress == "step 35 loss 0.0286" and f.after_s is not None and f.after_s >= 3.0, f


async def test_a_trainer_that_crashes_after_its_launcher_left_died_with_its_traceback(lab, lab_config, engines, tmp_path):
    cfg = launcher_config(lab, lab_config, tmp_path, "crash", 30)
    eng = engines(cfg)
    res, pid = await passed_with_trainer(lab, cfg, eng, "crash")
    f = await await_for(lambda: final(cfg, res.attempt), timeout=20, interval=0.1)
    assert (f.state, f.layer) == ("died", "app"), f
    assert f.cause.startswith(f"launcher exited 0; the trainer pid {pid} (python3 launcher_train.py crash 30 0.1) is gone; "
                              "its exit status was not observed (its launcher exited first): "), f.cause
    assert "RuntimeError" in f.cause, f.cause


@pytest.mark.parametrize(("runtime", "own_group"), [("pct", False), ("pct", True), ("host", False)],
                         ids=["pct-same-group", "pct-own-group", "host-same-group"])
async def test_stop_and_stacks_act_on_the_trainer_the_launcher_left(lab, lab_config, engines, tmp_path, runtime, own_group):
    # own-group: the trainer left the launcher's process group (setpgid) but not the session cockpit's supervisor leads
    host = runtime == "host"
    cfg = launcher_config(lab, lab_config, tmp_path, "hang", 15, host=host, own_group=own_group)  # trains 1.5 s, then waits for ever
    eng = engines(cfg)
    res, pid = await passed_with_trainer(lab, cfg, eng, "hang", host)
    text = Path(f"/proc/{pid}/stat").read_text() if host else lab.exec_in(CT, f"cat /proc/{pid}/stat").stdout
    fields = text.rsplit(")", 1)[1].split()
    assert (int(fields[2]), int(fields[3])) == ((pid, res.job.pgid) if own_group else (res.job.pgid, res.job.pgid)), fields[:4]
    v = await eng.run_action("verify")  # ``cockpit verify`` judges now: alive, as the trainer
    assert v.ok and f"launcher exited 0; trainer pid {pid} " in alive_stage(v).detail, v.summary()
    dump = await eng.stacks()  # the threads dumped are the trainer's
    assert dump is not None and pid in {t.pid for t in dump.threads}, (dump.note if dump else None)
    stop = await eng.run_action("stop")
    assert stop.ok, stop.summary()
    assert not alive_in_target(lab, pid, host), (stop.summary(), [(s.name, s.detail) for s in stop.stages])
    f = await await_for(lambda: final(cfg, res.attempt), timeout=10, interval=0.1)
    assert f.state == "stopped", f


async def test_a_status_that_was_not_watching_reads_the_end_from_the_log_not_the_launchers_exit(lab, lab_config, engines, tmp_path):
    cfg = launcher_config(lab, lab_config, tmp_path, "ok", 25)
    eng = engines(cfg)
    res = await eng.attempt("nobody follows", follow=False)
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    pid = trainer_pid(lab, res.job.log_path, False)
    await await_for(lambda: not alive_in_target(lab, pid, False), timeout=20, interval=0.2)
    report = await collect_status(cfg, quick=True)  # ``cockpit status``: a fresh reader, the journal's record
    f = report["latest_attempt"]["fate"]
    assert f["state"] == "finished" and f["layer"] is None, f
    # the log grew after the launcher's status was written: that status is not the job's
    assert f["cause"].startswith("launcher exited 0; what it left running ended with no error in its log after 25 progress lines"), f
    assert "its exit status was not observed" in f["cause"], f

"""A bare ``cockpit relaunch`` / ``cockpit launch`` is journalled as an attempt of its own, so the
next cockpit (another process: the user's next command) finds its job, stops it and never calls it
a stray.  Each step runs the installed ``cockpit`` command from the config's directory."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from typing import Any

from cockpit.core.config import Config
from cockpit.core.journal import Journal
from tests.lab import Lab

CT = 200


def cockpit(cfg: Config, *args: str) -> dict[str, Any]:
    """``cockpit ARGS --json`` run from the directory of the config (found there, as a user's is)."""
    assert cfg.path is not None
    r = subprocess.run([shutil.which("cockpit") or "cockpit", *args, "--json"], capture_output=True, text=True,
                       cwd=cfg.path.parent, timeout=120)
    assert r.stdout.startswith(("{", "[")), r.stderr + r.stdout
    doc: dict[str, Any] = json.loads(r.stdout)
    return doc


def job_pids(lab: Lab) -> set[int]:
    """Host-visible pids in the container whose command line is the lab's job simulator."""
    out = lab.exec_in(CT, "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null | grep -q jobsi[m].py && echo ${p#/proc/}; done; true").stdout
    return {int(x) for x in out.split() if x.isdigit()}


def test_relaunch_is_an_attempt_the_next_cockpit_stops(lab: Lab, lab_config: Callable[..., Config]) -> None:
    cfg = lab_config()
    first = cockpit(cfg, "attempt", "--note", "first")
    assert first["outcome"] == "passed", first
    again = cockpit(cfg, "relaunch")
    assert again["ok"] is True, again
    recs = Journal(cfg.journal_path).attempts()
    assert [r.note for r in recs] == ["first", "relaunch"]
    rel = recs[-1]
    assert rel.outcome_name == "passed" and rel.job and rel.job["pid"]
    # the relaunch's own log, not the next attempt's: a later attempt never writes over it
    assert rel.log_path == cfg.log_path(rel.attempt) and rel.log_path != recs[0].log_path
    assert job_pids(lab)  # the relaunched job runs
    stop = cockpit(cfg, "stop")
    stages = {s["name"]: s for s in stop["stages"]}
    assert f"job pid {rel.job['pid']}" in stages["identify job"]["detail"], stages["identify job"]
    assert stages["strays"]["detail"].startswith("no copy of the job"), stages["strays"]
    assert not job_pids(lab), "the relaunched job outlived cockpit stop"
    hist = cockpit(cfg, "history")
    rows = hist if isinstance(hist, list) else hist.get("attempts", [])
    assert [(r["note"], r["fate"]["state"] if r.get("fate") else None) for r in rows][-1] == ("relaunch", "stopped")


def test_a_bare_launch_is_stopped_by_the_next_attempt_not_left_as_a_stray(lab: Lab, lab_config: Callable[..., Config]) -> None:
    cfg = lab_config()
    launched = cockpit(cfg, "launch")
    assert launched["ok"] is True, launched
    rec = Journal(cfg.journal_path).attempts()[-1]
    assert rec.note == "launch" and rec.job
    assert rec.outcome_name == "running" and "not verified" in (rec.summary or "")  # never judged: no verdict, not "passed"
    assert not any(s["name"] == "progress" for s in launched["stages"])  # launch does not verify
    nxt = cockpit(cfg, "attempt", "--note", "after a launch")
    assert nxt["outcome"] == "passed", nxt
    names = {s["name"]: s for s in nxt["verdict"]["stages"]}
    assert f"job pid {rec.job['pid']}" in names["stop: identify job"]["detail"], names["stop: identify job"]
    assert names["stop: strays"]["detail"].startswith("no copy of the job"), names["stop: strays"]
    assert len(job_pids(lab)) <= 3  # one job (its shell, python and a helper at most), not two
    cockpit(cfg, "stop")

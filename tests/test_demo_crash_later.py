"""``cockpit demo crash-later`` / ``hang`` act on the running demo job, and only on it.

With no demo job running, the request was written all the same ("the running demo job will die in
5s") and waited in the workspace: the next demo job took it, and a fixed attempt then read
``passed → died (app) … (demo crash-later)``.  Now the command refuses (exit 2, saying how to start
one), and a job ignores a request written before it started.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import cockpit.demo as demo

PROJECT = Path(demo.__file__).parent / "project"


def _train() -> ModuleType:
    sys.path.insert(0, str(PROJECT))  # train.py imports its own minitorch
    try:
        spec = importlib.util.spec_from_file_location("demo_train_under_test", PROJECT / "train.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(PROJECT))


def test_crash_later_with_no_demo_job_running_refuses_and_schedules_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for what in ("crash-later", "hang"):
        r = subprocess.run([sys.executable, "-m", "cockpit", "demo", what, "--after", "1"], env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert "no demo job is running" in r.stderr and "cockpit attempt --demo" in r.stderr, r.stderr
        assert "will die" not in r.stdout
    assert not (tmp_path / "cache" / "cockpit" / "demo" / "workspace" / ".crash-later").exists()


def test_a_request_written_before_the_job_started_is_removed_not_obeyed(tmp_path: Path) -> None:
    train = _train()
    req = tmp_path / ".crash-later"
    req.write_text("crash 0\n")
    past = time.time() - 60
    os.utime(req, (past, past))  # left by a request no running job took, a minute before this job
    crash = train.CrashLater(str(req))
    crash.check(1)  # would raise at once (due in 0 s) if it obeyed
    assert crash.due is None and not req.exists()
    req.write_text("crash 0\n")  # a request for this job: obeyed
    try:
        crash.check(2)
    except RuntimeError as e:
        assert "demo crash-later" in str(e)
    else:
        raise AssertionError("a request written while the job runs was not obeyed")

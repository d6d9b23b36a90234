"""Stop stops what the job started in a session of its own while it is still the job's child.

A wrapper that starts its trainer with ``subprocess.Popen(start_new_session=True)`` (or a
``train.sh`` running ``setsid python train.py``) and waits for it: the trainer has left the job's
process group and session.  Stop signalled those, the wrapper died, and stop said "stopped with
TERM" and "no process of the job is left" while the trainer trained on (a second attempt ran beside
it); then it named the trainer as left running.  A process the job started is the job's as long as
it is a descendant of the job's processes: stop signals it (its own group, guarded by its start
time) with the job.  A daemon that double-forked has left the tree and is not touched
(tests/test_redteam_daemon_lab.py).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import script_command

pytestmark = pytest.mark.lab


async def test_stop_stops_a_trainer_its_wrapper_put_in_a_session_of_its_own(lab: Any, lab_config: Any, engines: Any) -> None:
    pid_file = Path(lab.workspace(200)) / "own-session-trainer.pid"
    pid_file.unlink(missing_ok=True)
    cfg = lab_config(job={"command": script_command(lab, "own_session_child.py", pid_file)}, verify={"settle": 1.0})
    eng = engines(cfg)
    res = await eng.attempt("trainer in its own session")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    await await_for(lambda: pid_file.exists() and pid_file.read_text().strip().isdigit(), 10, "the trainer's pid")
    trainer = int(pid_file.read_text())  # its pid inside the container's pid namespace
    try:
        v = await eng.run_action("stop")
        stages = {s.name.split(": ")[-1]: s for s in v.stages}
        assert v.ok, v.summary()
        assert f"pid {trainer} (python3)" in stages["identify job"].detail and "session of its own" in stages["identify job"].detail, v.summary()
        assert "with 1 process it started in a session of its own" in stages["terminate"].detail, v.summary()
        assert stages["nothing left"].detail == "no process of the job is left", v.summary()
        await await_for(lambda: not _trainers(), 5, "the trainer gone")
    finally:
        for pid in _trainers():
            os.kill(pid, signal.SIGKILL)


async def test_stop_leaves_a_daemon_the_job_double_forked_alone(lab: Any, lab_config: Any, engines: Any) -> None:
    # the other half of the rule: a daemon has left the job's tree (its parent is PID 1), so stop
    # never signals it (a stop that killed whatever the job ever started is the seed's pkill -9 -f)
    gate = Path(lab.workspace(200)) / "daemon-gate-stop"
    gate.unlink(missing_ok=True)
    cfg = lab_config(job={"command": script_command(lab, "daemon_trainer.py", gate)}, verify={"settle": 0.5})
    eng = engines(cfg)
    try:
        res = await eng.attempt("daemonized trainer")
        assert res.outcome is Outcome.PASSED, res.verdict.summary()
        # the launcher lingers half a second after its daemon came up: under load the verdict comes
        # first, and the launcher (the job itself, which stop must end) would be taken for the daemon
        await await_for(lambda: len(_running("daemon_trainer.py")) == 1, 10, "the launcher gone, the daemon training")
        daemons = _running("daemon_trainer.py")
        v = await eng.run_action("stop")
        assert v.ok, v.summary()
        assert "session of" not in " ".join(s.detail for s in v.stages), v.summary()
        assert all(Path(f"/proc/{pid}").exists() for pid in daemons), "stop signalled the daemon"
    finally:
        gate.touch()
        await await_for(lambda: not _running("daemon_trainer.py"), 10, "the daemon gone after its gate")


def _running(script: str, *also: bytes) -> list[int]:
    """The pids (as this machine sees them: the container has a pid namespace of its own) of the
    processes running ``script``, with every one of ``also`` among their arguments."""
    found = []
    for d in Path("/proc").iterdir():
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if d.name.isdigit() and any(a.endswith(script.encode()) for a in argv) and all(x in argv for x in also):
            found.append(int(d.name))
    return found


def _trainers() -> list[int]:
    return _running("own_session_child.py", b"trainer")

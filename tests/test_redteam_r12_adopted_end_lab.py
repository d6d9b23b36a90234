"""An adopted job that ends on its own, after its last line said so, finished; it did not die.

A trainer started by hand (``nohup python train.py > train.log &``) and adopted by a cockpit that
then exited ran to its end: ``training finished``, exit 0.  ``cockpit verify`` run later said
"process failed at alive: adopted pid N is gone with no error in its log; its exit status cannot be
observed (cockpit did not start it); its last line: training finished", and journalled ``died
(process)``.  Its status is still unseen, and says so; but gone with no error after saying training
ended is ``finished`` by its own word, as a launched job whose status went unobserved is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.core.engine import Engine
from tests.lab import await_for, wait_for
from tests.lab.runs import fate_of, script_command

pytestmark = pytest.mark.lab


def _gone(lab: Any, pid: int) -> bool:
    out = lab.exec_in(200, f"cat /proc/{pid}/stat 2>/dev/null").stdout
    return not out.strip() or out.rsplit(")", 1)[-1].split()[:1] == ["Z"]


async def test_an_adopted_job_that_ended_by_its_own_word_is_finished_to_a_later_verify(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"progress_pattern": r"step \d+"}, verify={"settle": 0.3, "fate_interval": 0.3})
    ws = Path(lab.workspace(200))
    log, pidf = ws / "r12-by-hand.log", ws / "r12-by-hand.pid"
    for f in (log, pidf):
        f.unlink(missing_ok=True)
    lab.exec_in(200, f"cd {ws} && setsid {script_command(lab, 'r12_steps.py', 30, 'ok')} > {log} 2>&1 < /dev/null & echo $! > {pidf}",
                check=True)
    wait_for(lambda: pidf.exists() and pidf.read_text().strip().isdigit() and "step" in log.read_text(), 10, message="the job by hand")
    pid = int(pidf.read_text())
    first = Engine(cfg)  # adopts it, and exits
    try:
        assert (v := await first.adopt(pid, follow=False)).ok, v.summary()
    finally:
        await first.close()
    await await_for(lambda: _gone(lab, pid), 10, "the job's own end")
    later = engines(cfg)
    v = await later.run_action("verify")
    assert v.failed_stage is None, v.summary()
    alive = next(s for s in v.stages if s.name == "alive")
    assert alive.detail.startswith("finished: ") and "training finished" in alive.detail and "cannot be observed" in alive.detail, alive.detail
    fate = fate_of(cfg, later.job_attempt)
    assert fate.state == "finished" and fate.layer is None and "cannot be observed" in fate.cause, fate

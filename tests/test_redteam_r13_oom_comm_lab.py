"""A torch trainer the OOM killer killed is the container's memory, even though the kernel calls it
``pt_main_thread``.

``import torch`` renames the main thread, and so the process's ``comm``, to ``pt_main_thread``: the
kernel's OOM report of a PyTorch job reads ``Memory cgroup out of memory: Killed process 91452
(pt_main_thread)``, with the job's *host* pid.  cockpit looked for an OOM kill by the name of the
first word of ``[job] command`` (``python3``), so it never found this one: the fate said ``died
(process)``, "killed by signal 9 (SIGKILL): killed by SIGKILL (the OOM killer?)", while ``cockpit
status`` listed, a few lines above, the kernel's own word that the OOM killer killed that very
process in the job's container.  It is ``died (container)``, killed by the OOM killer.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab.runs import final_fate, script_command

pytestmark = pytest.mark.lab


def _host_pid(script: str) -> int | None:
    """The host pid of the process running ``script`` whose comm is ``pt_main_thread``."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (proc / "comm").read_text().strip() == "pt_main_thread" and script in (proc / "cmdline").read_bytes().decode(errors="replace"):
                return int(proc.name)
        except OSError:
            continue
    return None


def _oom_kill(lab: Any, pid: int) -> None:
    """The kernel's three lines for a memory cgroup OOM kill of ``pid`` in container 200, as Proxmox hosts log them."""
    lab.add_kernel_message("pt_main_thread invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0")
    lab.add_kernel_message("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=ns,mems_allowed=0,oom_memcg=/lxc/200,"
                           f"task_memcg=/lxc/200/ns,task=pt_main_thread,pid={pid},uid=0")
    lab.add_kernel_message(f"Memory cgroup out of memory: Killed process {pid} (pt_main_thread) total-vm:187654321kB, "
                           "anon-rss:131234567kB, file-rss:123456kB, shmem-rss:0kB, UID:0 pgtables:260000kB oom_score_adj:0")


async def test_a_torch_trainer_killed_by_the_oom_killer_died_of_the_containers_memory(lab: Any, lab_config: Any, engines: Any) -> None:
    command = script_command(lab, "r13_oom_comm.py")
    cfg = lab_config(job={"command": command, "progress_pattern": r"^step \d+"}, verify={"settle": 0.3, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("a bigger batch")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    pid = _host_pid(str(Path(lab.workspace(200)) / "r13_oom_comm.py"))
    assert pid is not None, "the trainer's host pid"
    _oom_kill(lab, pid)
    os.kill(pid, signal.SIGKILL)  # what the OOM killer does
    fate = await final_fate(cfg, res.attempt)
    assert fate.state == "died", fate
    assert fate.layer == "container" and "OOM killer" in fate.cause, (
        f"the kernel log says the OOM killer killed the job's main process (host pid {pid}, pt_main_thread) "
        f"in container 200: {fate}")

"""Zombies judged by persistence, against the lab (real namespaces, real inits).

Right after stop kills the job, its orphans are briefly ``Z`` until PID 1 reaps them.  The lab's
init can reap late (``reap_delay`` in the container's conf.json): the stop must wait for the reap,
not blame the init.  Under ``sleepy-init`` (never reaps) the zombie outlives the grace and is named,
with PID 1, as before.
"""

from __future__ import annotations

import pytest

from cockpit.core.actions.base import ActionContext
from cockpit.core.actions.job import launch, stop
from cockpit.core.actions.stop import ZOMBIE_GRACE
from cockpit.core.layers import Layer, Status

pytestmark = pytest.mark.lab


def _stage(v, name):
    return next(s for s in v.stages if s.name == name)


async def test_orphans_reaped_late_by_pid_1_do_not_fail_the_stop(lab, lab_config, engines):
    lab.add_container(231, reap_delay=0.3)  # PID 1 reaps, 0.3 s after each death
    try:
        cfg = lab_config(target={"container": 231})
        ctx = ActionContext(cfg, engines(cfg).transport)
        v, rec = await launch(ctx, 1)
        assert v.ok and rec is not None, v.summary()
        v = await stop(ctx, rec)
        assert v.ok, v.summary()
        left = _stage(v, "nothing left")
        assert left.status is Status.OK
        # the killed job's processes were seen as zombies of PID 1, re-checked, and reaped
        assert left.data["reaped_zombies"] >= 1, left.detail
        assert left.data["waited_s"] < ZOMBIE_GRACE
        assert "not a known reaping init" not in v.summary() and "zombie (" not in v.summary()
        assert ") Z " not in lab.exec_in(231, "cat /proc/[0-9]*/stat").stdout
    finally:
        lab.remove_container(231)


async def test_the_seed_zombie_under_a_non_reaping_init_is_still_named(lab, lab_config, engines):
    lab.add_container(232, reaping_init=False)
    try:
        cfg = lab_config(target={"container": 232})
        ctx = ActionContext(cfg, engines(cfg).transport)
        v, rec = await launch(ctx, 1)
        assert v.ok and rec is not None, v.summary()
        v = await stop(ctx, rec)
        assert v.layer is Layer.CONTAINER, v.summary()
        failed = v.failed_stage
        assert failed.name.endswith("nothing left")
        assert "zombie" in failed.detail and "parent 1 (sleepy-init)" in failed.detail
        assert "not a known reaping init" in failed.detail and "does not reap" in failed.detail
        # named only once it had outlived the grace period: persistence, not one glance
        assert failed.data["waited_s"] >= ZOMBIE_GRACE and failed.data["pid1_reaps"] is False
        assert "reboot" in failed.advice
    finally:
        lab.remove_container(232)

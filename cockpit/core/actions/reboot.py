"""Reboot the container: the honest cure for a zombie that PID 1 will never reap.

``pct reboot CTID`` (``docker restart NAME``, ``podman restart NAME``) on the host, wait until
the runtime says it runs again, rebuild the
persistent session (the old one died with the container), and prove the process table is clean.
Destructive: the UI asks for confirmation and shows the exact command first.
"""

from __future__ import annotations

import asyncio
import time

from ..layers import Layer, Verdict
from .base import ActionContext, StageFailed, VerdictBuilder
from .proctable import ps_table

__all__ = ["reboot", "REBOOT_PLAN", "reboot_command"]

REBOOT_PLAN = [("reboot", Layer.HOST), ("running again", Layer.HOST), ("session rebuilt", Layer.CONTAINER), ("clean process table", Layer.CONTAINER)]
REBOOT_TIMEOUT = 180.0


def reboot_command(ctx: ActionContext) -> str:
    return ctx.transport.runtime.restart_command()


async def reboot(ctx: ActionContext, verdict: Verdict | None = None) -> Verdict:
    vb = VerdictBuilder(ctx, "reboot", REBOOT_PLAN, verdict)
    rt = ctx.transport.runtime
    async with vb.stage("reboot") as st:
        if not rt.can_reboot:
            raise StageFailed(Layer.CONFIG, rt.reboot_refusal, advice="reboot the host by hand if you must")
        cmd = reboot_command(ctx)
        res = await ctx.run_host(cmd, timeout=REBOOT_TIMEOUT)
        out = (res.text + res.err_text).strip()
        if res.timed_out:
            raise StageFailed(Layer.HOST, f"container did not stop: `{cmd}` still running after {REBOOT_TIMEOUT:g}s", evidence=res.evidence(),
                              advice=f"a process stuck in D state can block shutdown; try `{rt.tool} stop` on the host")
        if not res.ok:
            raise StageFailed(Layer.HOST, f"`{cmd}` failed (exit {res.exit_code}): {out[:300]}", evidence=res.evidence())
        st.ok(f"`{cmd}` returned", res.evidence())
    if vb.failed:
        return vb.finish()
    await ctx.transport.reset_session()
    async with vb.stage("running again") as st:
        deadline = time.monotonic() + REBOOT_TIMEOUT
        since = time.time()
        while True:
            vb.running("running again", f"waiting for the container ({rt.status_command()})", since=since, deadline_s=REBOOT_TIMEOUT)
            res = await ctx.run_host(rt.status_command(), timeout=20)
            if rt.parse_status(res.text) == "running":
                break
            if time.monotonic() > deadline:
                raise StageFailed(Layer.HOST, f"container not running {REBOOT_TIMEOUT:g}s after {rt.restart_word}: {res.text.strip()}", evidence=res.evidence())
            await asyncio.sleep(0.5)
        st.ok(rt.running_text)
    if vb.failed:
        return vb.finish()
    async with vb.stage("session rebuilt") as st:
        res = await ctx.run("cat /proc/1/comm", timeout=20)
        st.ok(f"shell answers; PID 1 is {res.text.strip()}")
    if vb.failed:
        return vb.finish()
    async with vb.stage("clean process table") as st:
        table = await ps_table(ctx)
        zombies = [p for p in table if p[3].startswith("Z")]
        if zombies:
            raise StageFailed(Layer.CONTAINER, "zombies right after reboot: " + ", ".join(f"{p[0]} ({p[4]})" for p in zombies))
        st.ok(f"{len(table)} processes, no zombies")
    ctx.job = None
    return vb.finish()

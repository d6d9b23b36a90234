"""Node-local caches of a Slurm job (``[slurm] node_local_cache = true``): ``[cache] paths`` live on
each compute node's own disk (``/tmp/torchinductor_root`` on every node), not on the shared file
system the login node sees, so removing them on the login node would clear nothing.

* **clear-cache** runs, on each node of the job cockpit launched last while it holds nodes, a step
  overlapping the job's (``srun --jobid=ID --overlap -N1 -n1 -w NODE``) that resolves, judges,
  measures, removes and proves gone each path; a node srun cannot reach fails the stage naming it.
  With no job on nodes there is nothing to reach: the stage says so (skipped).
* **the generated batch script** clears them on every node of the new allocation before the
  command (``srun --overlap --ntasks-per-node=1 -N $SLURM_JOB_NUM_NODES``), so an attempt's job
  starts on fresh caches wherever Slurm puts it; the lines land in the job's log, and a path that
  will not go ends the job before the command (exit 95) instead of running on stale caches.

Paths pass the same safety rules as any clear-cache: by their text first
(:func:`~cockpit.core.paths.check_cache_path`), then on each node by what they resolve to there,
through the very guard script the plain clear-cache runs (:mod:`cockpit.core.actions.cache_guard`):
a path that is or holds the workdir or the deploy dest, is or holds a home (or is an entry directly
in one) or touches a system tree is refused (the node removes nothing then), and a symlink is
refused, as everywhere.
"""

from __future__ import annotations

import shlex
from typing import Any

from ..actions.base import ActionContext, StageFailed, VerdictBuilder
from ..actions.cache_guard import REFUSED_EXIT, guard_script, parse_guard, refusal
from ..layers import Layer, Verdict
from ..paths import check_cache_path, norm_remote_path
from .gpus import job_nodes_command, on_node, parse_job_nodes
from .state import slurm_cmd

__all__ = ["node_cache_script", "batch_clear_lines", "parse_node_cache", "clear_node_local", "NODE_CACHE_PLAN"]

NODE_CACHE_PLAN = [("paths", Layer.CONFIG), ("on the nodes", Layer.HOST)]


def safe_paths(cfg: Any) -> list[str]:
    """``[cache] paths`` normalised, each checked by the clear-cache rules (:class:`StageFailed` if not)."""
    protect = (cfg.job.workdir, cfg.deploy.dest or "")
    for p in cfg.cache.paths:
        why = check_cache_path(p, protect)
        if why:
            raise StageFailed(Layer.CONFIG, f"refusing to clear {p!r}: it {why}", advice="fix [cache] paths")
    return [norm_remote_path(p) for p in cfg.cache.paths]


def node_cache_script(paths: list[str], workdir: str = "", dest: str = "") -> str:
    """Run on a node: the clear-cache guard (resolve, judge, measure, remove), one ``cockpit-cache``
    line per path; exit 3 when one is refused (nothing removed), 1 when one is still there after ``rm``."""
    return guard_script(paths, workdir, dest, remove=True)


def batch_clear_lines(cfg: Any) -> str:
    """The generated batch script's lines that clear the node-local caches on every node ("" when off)."""
    if not cfg.slurm.node_local_cache or not cfg.cache.paths:
        return ""
    paths = [norm_remote_path(p) for p in cfg.cache.paths]  # checked by their text at config load (cache.paths)
    script = node_cache_script(paths, cfg.job.workdir, cfg.deploy.dest or "")
    return (f"{slurm_cmd(cfg, 'srun')} --overlap --ntasks-per-node=1 -N \"$SLURM_JOB_NUM_NODES\" --quiet "
            f"sh -c {shlex.quote(script)} || "
            "{ echo 'cockpit: the node-local caches could not be cleared on every node (see cockpit-cache lines)' >&2; exit 95; }\n")


def parse_node_cache(out: str, paths: list[str]) -> list[tuple[str, str, int | None, str]]:
    """``(node, what, KiB or None, resolved path)`` of each ``cockpit-cache`` line."""
    return [(j.node, j.what, j.kib, j.resolved) for j in parse_guard(out, paths)]


async def clear_node_local(ctx: ActionContext, verdict: Verdict | None = None) -> Verdict:
    """clear-cache for node-local caches (see the module doc)."""
    vb = VerdictBuilder(ctx, "clear-cache", NODE_CACHE_PLAN, verdict)
    cfg = ctx.cfg
    async with vb.stage("paths") as st:
        paths = safe_paths(cfg)
        if not paths:
            st.skip("no [cache] paths configured")
            return vb.finish()
        st.ok(f"node-local: {', '.join(paths)}")
    if vb.failed:
        return vb.finish()
    async with vb.stage("on the nodes") as st:
        job = ctx.current_job
        later = ("the generated batch script clears them on each node before the command" if not cfg.slurm.script
                 else "[slurm] script is your own: it must clear them on each node itself")
        if job is None or not getattr(job, "sched_id", ""):
            st.skip(f"no Slurm job holds nodes now: nothing to reach ({later})")
            return vb.finish()
        res = await ctx.run(job_nodes_command(cfg, job.sched_id), timeout=20)
        nodes = parse_job_nodes(res.text)
        if not nodes:
            st.skip(f"Slurm job {job.sched_id} runs on no node now: nothing to reach ({later})")
            return vb.finish()
        script, cleared, total = node_cache_script(paths, cfg.job.workdir, cfg.deploy.dest or ""), [], 0
        for node in nodes:
            r = await ctx.run(on_node(cfg, job.sched_id, node, script, timeout=60), timeout=80)
            judged = [j for j in parse_guard(r.text, paths) if j.node == node or len(nodes) == 1]
            refused = [j for j in judged if j.what == "refused"]
            if refused:
                raise StageFailed(Layer.CONFIG, f"node {node} of Slurm job {job.sched_id}: "
                                  + refusal(refused[0], cfg.job.workdir, cfg.deploy.dest or "") + "; nothing was removed there",
                                  evidence=r.evidence(), advice="fix [cache] paths", data={"node": node})
            rows = [(j.node, j.what, j.kib, j.resolved) for j in judged]
            bad = [f"{p} ({what})" for _, what, _, p in rows if what == "left"]
            if r.exit_code != 0 or len(rows) != len(paths):
                why = "; ".join(bad) or (r.err_text or r.text).strip()[-300:] or f"exit {r.exit_code}"
                layer = Layer.CONTAINER if bad or r.exit_code == REFUSED_EXIT else Layer.HOST
                raise StageFailed(layer,
                                  f"node {node} of Slurm job {job.sched_id}: node-local caches not cleared: {why}", evidence=r.evidence(),
                                  advice="check the node: scontrol show node NAME",
                                  data={"node": node})
            kib = sum(k or 0 for _, what, k, _ in rows if what == "removed")
            total += kib
            cleared.append({"node": node, "removed_kib": kib, "paths": {p: what for _, what, _, p in rows}})
        st.ok(f"cleared on {len(nodes)} node(s) of Slurm job {job.sched_id} ({', '.join(nodes)}): {total} KiB removed",
              nodes=cleared)
    ctx.caches = [{"path": p, "node_local": True} for p in paths]
    return vb.finish()

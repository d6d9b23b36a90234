"""Clear the compile caches (``[cache] paths``): measure, remove, prove they are gone.

Paths were checked by their text at config load (:func:`~cockpit.core.paths.check_cache_path`)
and are checked so again here, since an action can be called with any config object.  The
authority is the target: :mod:`.cache_guard` resolves each path there and judges what it resolves
to (a cache under a symlinked parent may be the workdir), first as the measuring preview, then
again in the very command that removes, so a change between the two cannot slip through.
A job still holding files open under a cache path is reported: clearing under a live job does not
give it a fresh cache.

Before that, the ``caches`` stage shows the compile caches the job really uses
(:mod:`.cache_inventory`: from the running job's environment, ``[job] env`` or the defaults), each
with its size and entry count; they are removed with ``[cache] paths`` only when ``[cache]
discover`` is true, and only when the guard passed them (a refused one is named, never removed).
"""

from __future__ import annotations

import shlex

from ..layers import Layer, Verdict
from ..paths import check_cache_path, norm_remote_path
from .base import ActionContext, StageFailed, VerdictBuilder, check
from .cache_guard import REFUSED_EXIT, Judged, guard_script, parse_guard, refusal
from .cache_inventory import SOURCE_WORDS, Inventory, discover_and_judge, inventory_and_guard_script

__all__ = ["clear_cache", "caches_command", "CACHE_PLAN"]

CACHE_PLAN = [("caches", Layer.CONTAINER), ("measure", Layer.CONTAINER), ("remove", Layer.CONTAINER), ("gone", Layer.CONTAINER)]
_ADVICE = "fix [cache] paths: list only cache directories, e.g. \"/tmp/torchinductor_root\""


def _refuse(rows: list[Judged], ctx: ActionContext) -> None:
    bad = [j for j in rows if j.what == "refused"]
    if bad:
        workdir, dest = ctx.cfg.job.workdir, ctx.cfg.deploy.dest or ""
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise StageFailed(Layer.CONFIG, refusal(bad[0], workdir, dest) + more, advice=_ADVICE,
                          data={"refused": [{"configured": j.configured, "resolved": j.resolved, "rule": j.rule,
                                             "protected": j.protected} for j in bad]})


def _resolved(j: Judged) -> str:
    return j.resolved if j.resolved == j.configured else f"{j.configured} → {j.resolved}"


def _inventory_words(inv: Inventory, workdir: str, dest: str, remove: bool) -> tuple[str, list[str], str]:
    """The caches stage's detail, the discovered roots to remove, and a warning (a refused one)."""
    words, extra, warn = [], [], []
    for root in inv.roots:
        j = inv.judged_of(root)
        parts = "; ".join(p.words for p in inv.parts(root))
        if j is not None and j.what == "refused":
            fate = "refused: " + refusal(j, workdir, dest)
            warn.append(fate)
        elif j is not None and j.what == "present":
            fate = "removed with [cache] paths" if remove else "shown only ([cache] discover = false)"
            if remove:
                extra.append(j.resolved)
        else:
            fate = "not judged by the guard: left alone"
        words.append(f"{root.path} from {SOURCE_WORDS.get(root.source, root.source)}: {root.words}"
                     + (f" ({parts})" if parts else "") + f", {fate}")
    return "; ".join(words) or "no compile caches found", extra, "; ".join(warn)


def _inventory_args(ctx: ActionContext) -> tuple[int | None, list[str]]:
    """The caches stage's inventory: the running job's pid, and the ``[cache] paths`` the guard
    previews (none when one fails the text rules: nothing reaches the target that fails them, the
    measure stage says why)."""
    workdir, dest = ctx.cfg.job.workdir, ctx.cfg.deploy.dest or ""
    text_ok = not any(check_cache_path(p, (workdir, dest)) for p in ctx.cfg.cache.paths)
    job = ctx.current_job
    return (job.pid if job is not None and job.started else None), (list(ctx.cfg.cache.paths) if text_ok else [])


def caches_command(ctx: ActionContext) -> str | None:
    """Exactly what the caches stage will run (a read: it may ride an earlier stage's batch,
    :meth:`~.base.ActionContext.ride`); None where clear-cache runs on the job's nodes."""
    rt = ctx.transport.runtime
    if rt.job_nodes is not None and rt.node_local_caches(ctx.cfg):
        return None
    cfg = ctx.cfg
    pid, paths = _inventory_args(ctx)
    return inventory_and_guard_script(pid, dict(cfg.job.env), cfg.job.workdir, cfg.deploy.dest or "", paths)


async def clear_cache(ctx: ActionContext, verdict: Verdict | None = None) -> Verdict:
    rt = ctx.transport.runtime
    if rt.job_nodes is not None and rt.node_local_caches(ctx.cfg):  # on each node of the job (a step there)
        return await rt.job_nodes.clear_caches(ctx, verdict)
    paths = [norm_remote_path(p) for p in ctx.cfg.cache.paths]  # a trailing slash on a symlink would make rm empty its target
    workdir, dest = ctx.cfg.job.workdir, ctx.cfg.deploy.dest or ""
    vb = VerdictBuilder(ctx, "clear-cache", CACHE_PLAN, verdict)
    rows: list[Judged] = []
    extra: list[str] = []
    code = 0
    async with vb.stage("caches") as st:  # what the job uses, before anything is removed
        # one command: the inventory, and the guard's measuring preview of [cache] paths (the measure stage's)
        inv, rows, code = await discover_and_judge(ctx, *_inventory_args(ctx))
        detail, found, warn = _inventory_words(inv, workdir, dest, ctx.cfg.cache.discover)
        extra = [p for p in found if p not in paths and not check_cache_path(p, (workdir, dest))]
        st.ok(detail, found=[{"kind": f.kind, "source": f.source, "path": f.path, "kib": f.kib, "files": f.files} for f in inv.found],
              remove=extra)
        if warn:
            st.advice = "warning: " + warn
    if vb.failed:
        return vb.finish()
    async with vb.stage("measure") as st:
        for p in ctx.cfg.cache.paths:  # the text rules first: nothing reaches the target that fails them
            why = check_cache_path(p, (workdir, dest))
            if why:
                raise StageFailed(Layer.CONFIG, f"refusing to clear {p!r}: it {why}", advice=_ADVICE)
        if not paths and not extra:
            st.skip("no [cache] paths configured")
            return vb.finish()
        _refuse(rows, ctx)  # judged on the target by the caches stage's command
        if code != 0 or len(rows) != len(paths):
            raise StageFailed(Layer.CONTAINER, f"could not resolve the cache paths on the target (exit {code})",
                              advice="the guard needs sh, realpath or readlink -f, and du on the target")
        present = [j.resolved for j in rows if j.what == "present"] + extra
        q = " ".join(shlex.quote(p) for p in present) or "''"
        users = await ctx.run(
            "for f in /proc/[0-9]*/fd/* /proc/[0-9]*/cwd; do l=$(readlink \"$f\" 2>/dev/null) || continue; "
            f"for p in {q}; do case \"$l\" in \"$p\"|\"$p\"/*) echo \"${{f#/proc/}} $l\";; esac; done; done | cut -d/ -f1 | sort -u",
            timeout=20,
        ) if present else None
        in_use = [x for x in users.text.split() if x.isdigit()] if users is not None else []
        desc = ", ".join(f"{_resolved(j)} ({j.kib if j.kib is not None else '?'} KiB)" if j.what == "present"
                         else f"{_resolved(j)} (absent)" for j in rows) or "no [cache] paths configured"
        desc += "".join(f", {p} (found)" for p in extra)
        st.ok(desc, sizes={j.configured: j.kib if j.what == "present" else None for j in rows},
              resolved={j.configured: j.resolved for j in rows}, in_use_by=in_use)
        if in_use:
            st.advice = f"warning: processes {', '.join(in_use)} still use the cache; stop the job first"
            st.detail += f"; still in use by pid {', '.join(in_use)}"
    if vb.failed:
        return vb.finish()
    sizes = {j.configured: j.kib for j in rows if j.what == "present"}
    sizes.update({p: next((f.kib for f in inv.roots if f.path == p), None) for p in extra})
    paths = paths + extra
    async with vb.stage("remove") as st:
        # every path, even one the measure found absent: that reading may predate a stage in between
        # (an attempt reads it during deploy, and the old job it then stops may have written since);
        # judged again on the target in the command that removes: the authority
        res = await ctx.run(guard_script(paths, workdir, dest, remove=True, measure=False), timeout=120)
        done = parse_guard(res.text, paths)
        _refuse(done, ctx)
        if res.exit_code == REFUSED_EXIT or len(done) != len(paths):
            check(res, Layer.CONTAINER, "removing the caches")
            raise StageFailed(Layer.CONTAINER, f"removing the caches: the guard answered {len(done)} of {len(paths)} path(s)",
                              evidence=res.evidence())
        rows = sorted(done, key=lambda j: j.index)
        left = [j.resolved for j in rows if j.what == "left"]
        if left:
            raise StageFailed(Layer.CONTAINER, f"still present after rm: {', '.join(left)}", evidence=res.evidence(),
                              advice="a live process may be recreating it, or the filesystem is read-only")
        gone = [j for j in rows if j.what == "removed"]
        late = [j for j in gone if j.configured not in sizes]  # absent when measured, there when removed
        st.ok((f"removed {len(gone)} path(s), {sum(sizes.get(j.configured) or 0 for j in gone)} KiB"
               + (f" (+{len(late)} made since the measure, size unknown)" if late else "") + ": "
               + ", ".join(_resolved(j) for j in gone)) if gone else "nothing to remove (every path absent)",
              made_since_measure=[j.configured for j in late])
    if vb.failed:
        return vb.finish()
    async with vb.stage("gone") as st:
        if not gone:  # nothing was there when the guard looked, in the removing command itself
            st.ok("all cache paths are gone (absent when removed)")
        else:
            resolved = [j.resolved for j in rows]
            q = " ".join(shlex.quote(p) for p in resolved)
            res = await ctx.run(f"for p in {q}; do if [ -e \"$p\" ]; then echo 1; else echo 0; fi; done", timeout=20)
            said = res.text.split("\n")
            left = [p for i, p in enumerate(resolved) if i >= len(said) or said[i] != "0"]  # no answer: not proven gone
            if left:
                raise StageFailed(Layer.CONTAINER, f"still present after rm: {', '.join(left)}", evidence=res.evidence(),
                                  advice="a live process may be recreating it, or the filesystem is read-only")
            st.ok("all cache paths are gone")
    ctx.caches = [{"path": j.configured, "resolved": j.resolved, "kib": sizes.get(j.configured)} for j in rows]
    return vb.finish()

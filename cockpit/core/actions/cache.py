"""Clear the compile caches (``[cache] paths``): measure, remove, prove they are gone.

Paths were validated at config load (never ``/``, a home directory itself, empty, or with
``..``); they are checked again here, since an action can be called with any config object.
A job still holding files open under a cache path is reported: clearing under a live job does not
give it a fresh cache.
"""

from __future__ import annotations

import shlex

from ..layers import Layer, Verdict
from ..paths import check_cache_path, norm_remote_path
from .base import ActionContext, StageFailed, VerdictBuilder, check

__all__ = ["clear_cache", "CACHE_PLAN"]

CACHE_PLAN = [("measure", Layer.CONTAINER), ("remove", Layer.CONTAINER), ("gone", Layer.CONTAINER)]


async def clear_cache(ctx: ActionContext, verdict: Verdict | None = None) -> Verdict:
    if ctx.cfg.target.runtime == "slurm" and ctx.cfg.slurm.node_local_cache:  # on each node of the job (a step there)
        from ..slurm.cache import clear_node_local

        return await clear_node_local(ctx, verdict)
    paths = list(ctx.cfg.cache.paths)
    vb = VerdictBuilder(ctx, "clear-cache", CACHE_PLAN, verdict)
    sizes: dict[str, int | None] = {}
    async with vb.stage("measure") as st:
        protect = (ctx.cfg.job.workdir, ctx.cfg.deploy.dest or "")
        for p in paths:
            why = check_cache_path(p, protect)
            if why:
                raise StageFailed(Layer.CONFIG, f"refusing to clear {p!r}: it {why}", advice="fix [cache] paths")
        paths = [norm_remote_path(p) for p in paths]  # a trailing slash on a symlink would make rm empty its target
        if not paths:
            st.skip("no [cache] paths configured")
            return vb.finish()
        q = " ".join(shlex.quote(p) for p in paths)
        links = await ctx.run(f"for p in {q}; do [ -L \"$p\" ] && echo \"$p -> $(readlink \"$p\")\"; done; true", timeout=20)
        if links.text.strip():
            raise StageFailed(Layer.CONFIG, f"refusing to clear a symlink: {links.text.strip().splitlines()[0]}",
                              advice="list the real cache directory in [cache] paths, not a link to it (rule: no symlinks)")
        # one line per path, in order (a path may hold a newline): its size in KiB, "?" when du
        # cannot tell (it is there all the same), "-" when absent
        res = await ctx.run(f"for p in {q}; do if [ -e \"$p\" ]; then s=$(du -sk -- \"$p\" 2>/dev/null | head -n 1 | cut -f1); "
                            "echo \"${s:-?}\"; else echo -; fi; done", timeout=60)
        for path, size in zip(paths, res.text.split("\n"), strict=False):
            sizes[path] = None if size == "-" else int(size) if size.isdigit() else 0
        users = await ctx.run(
            "for f in /proc/[0-9]*/fd/* /proc/[0-9]*/cwd; do l=$(readlink \"$f\" 2>/dev/null) || continue; "
            f"for p in {q}; do case \"$l\" in \"$p\"|\"$p\"/*) echo \"${{f#/proc/}} $l\";; esac; done; done | cut -d/ -f1 | sort -u",
            timeout=20,
        )
        in_use = [x for x in users.text.split() if x.isdigit()]
        desc = ", ".join(f"{p} ({sizes.get(p)} KiB)" if sizes.get(p) is not None else f"{p} (absent)" for p in paths)
        st.ok(desc, sizes=sizes, in_use_by=in_use)
        if in_use:
            st.advice = f"warning: processes {', '.join(in_use)} still use the cache; stop the job first"
            st.detail += f"; still in use by pid {', '.join(in_use)}"
    if vb.failed:
        return vb.finish()
    async with vb.stage("remove") as st:
        present = [p for p in paths if sizes.get(p) is not None]
        if not present:
            st.ok("nothing to remove")
        else:
            res = await ctx.run("rm -rf -- " + " ".join(shlex.quote(p) for p in present), timeout=120)
            check(res, Layer.CONTAINER, "removing the caches")
            st.ok(f"removed {len(present)} path(s), {sum(sizes[p] or 0 for p in present)} KiB")
    if vb.failed:
        return vb.finish()
    async with vb.stage("gone") as st:
        q = " ".join(shlex.quote(p) for p in paths)
        res = await ctx.run(f"for p in {q}; do if [ -e \"$p\" ]; then echo 1; else echo 0; fi; done", timeout=20)
        said = res.text.split("\n")
        left = [p for i, p in enumerate(paths) if i >= len(said) or said[i] != "0"]  # no answer: not proven gone
        if left:
            raise StageFailed(Layer.CONTAINER, f"still present after rm: {', '.join(left)}", evidence=res.evidence(), advice="a live process may be recreating it, or the filesystem is read-only")
        st.ok("all cache paths are gone")
    ctx.state["caches"] = [{"path": p, "kib": sizes.get(p)} for p in paths]
    return vb.finish()

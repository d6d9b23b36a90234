"""The exact commands a destructive action will run, for its confirmation modal.

They come from the same core functions the actions use (``actions.job`` for the stop signals,
the runtime's ``restart_command`` for the reboot, ``actions.cache_guard`` for clear-cache), so what the
modal shows is what runs.  clear-cache removes what each path *resolves to on the target*; its text
shows that resolution when a preview (:func:`~cockpit.core.actions.cache_guard.resolve_cache_paths`)
was taken, and otherwise says that the target resolves them before removal.
"""

from __future__ import annotations

import shlex

from ..core.actions import job as job_actions
from ..core.actions.cache_guard import Judged, refusal
from ..core.actions.jobrecord import JobRecord
from ..core.config import Config
from ..core.face import EngineFace
from ..core.paths import norm_remote_path
from ..core.runtimes import Runtime, runtime_for

__all__ = ["stop_commands", "reboot_command", "target_where", "clear_cache_text"]


def _signal_group(sig: str, job: JobRecord) -> str:
    """The signal command exactly as stop runs it: the pid guarded by its recorded start time."""
    return job_actions.signal_group(sig, job, start_time=job.start_time)


def target_where(cfg: Config, *, host: bool = False) -> str:
    """Where a command of this target runs, for a confirmation modal (``host``: on the host)."""
    t = cfg.target
    if t.transport == "local":
        where = "on this machine (local transport)"
    else:
        dest = f"{t.user}@{t.host}" if t.user else t.host
        where = f"over SSH on {dest}" + (f" port {t.port}" if t.port else "")
    return where + runtime_for(cfg).where_text(host=host)


def stop_commands(engine: EngineFace) -> tuple[str, str] | None:
    """(what happens, the commands) for stopping the recorded job; None when there is no job."""
    job = engine.job
    if job is None or not job.pid:
        return None
    why = job_actions.unsafe_ids(job.pid, job.pgid)  # stop refuses such a record: say so, never raise
    if why is not None:
        return (f"The record of attempt #{job.attempt} names pid {job.pid}, process group {job.pgid}: {why}. "
                "Stop signals nothing of it.", "# nothing is signalled")
    timeout = engine.cfg.job.stop_timeout
    lines = []
    if job.unit:
        lines.append(f"systemctl stop --no-block {job.unit}")
    lines.append(_signal_group("TERM", job))
    lines.append(f"# after {timeout:g}s, if any process of group {job.pgid or job.pid} is left:")
    lines.append(_signal_group("KILL", job))
    body = (f"Stops the job cockpit launched (attempt #{job.attempt}): pid {job.pid}, process group {job.pgid or job.pid}"
            + (f", unit {job.unit}" if job.unit else "")
            + ". Only that group is signalled, never a pattern; then cockpit checks nothing of it is left "
            "(zombies are reported with their parent).")
    return body, "\n".join(lines)


def reboot_command(engine: EngineFace) -> str | None:
    """The host command reboot runs; None when the target's runtime cannot be rebooted."""
    rt: Runtime = engine.transport.runtime
    return rt.restart_command() if rt.can_reboot else None


def clear_cache_text(cfg: Config, judged: list[Judged] | None = None) -> tuple[str, str]:
    """(what happens, the commands) for clearing ``[cache] paths``: with ``judged`` (the target's
    preview) each path as the target resolved it, its size, or why it is refused; without one the
    configured paths, marked as resolved on the target before removal."""
    body = ("Removes each [cache] path after resolving it on the target, in the same command: one that is or "
            "holds the workdir or the deploy dest, is or holds a home, or lies in a system tree "
            "(/usr, /lib*, /etc, /var/lib, …) is refused, and then nothing is removed.")
    if not cfg.cache.paths:
        return body, "(no [cache] paths configured)"
    if judged is None:
        return body, "\n".join(f"rm -rf -- {shlex.quote(norm_remote_path(p))}   # resolved on the target before removal" for p in cfg.cache.paths)
    lines = []
    for j in judged:
        if j.what == "refused":
            lines.append(f"# {refusal(j, cfg.job.workdir, cfg.deploy.dest or '')}")
        elif j.what == "absent":
            lines.append(f"# {j.configured}: absent, nothing to remove")
        else:
            notes = ([f"configured as {j.configured}"] if j.resolved != j.configured else []) + ([f"{j.kib} KiB"] if j.kib is not None else [])
            lines.append(f"rm -rf -- {shlex.quote(j.resolved)}" + (f"   # {'; '.join(notes)}" if notes else ""))
    return body, "\n".join(lines)

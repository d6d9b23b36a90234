"""The exact commands a destructive action will run, for its confirmation modal.

They come from the same core functions the actions use (``actions.job`` for the stop signals,
the runtime's ``pct_command`` for the reboot), so what the modal shows is what runs.
"""

from __future__ import annotations

from typing import Any

from ..core.actions import job as job_actions
from ..core.remote.runtime import Runtime

__all__ = ["stop_commands", "reboot_command", "target_where"]


def _signal_group(sig: str, job: Any) -> str:
    return job_actions.signal_group(sig, job)


def target_where(cfg: Any, *, host: bool = False) -> str:
    t = cfg.target
    if t.transport == "local":
        where = "on this machine (local transport)"
    else:
        dest = f"{t.user}@{t.host}" if t.user else t.host
        where = f"over SSH on {dest}" + (f" port {t.port}" if t.port else "")
    if t.runtime == "pct" and not host:
        where += f", inside container {t.container} (pct exec {t.container} -- /bin/sh -c …)"
    elif t.runtime == "pct":
        where += f", on the Proxmox host (container {t.container})"
    elif t.runtime in ("docker", "podman") and not host:
        where += f", inside {t.runtime} container {t.container} ({t.runtime} exec -i {t.container} /bin/sh -c …)"
    elif t.runtime in ("docker", "podman"):
        where += f", on the host ({t.runtime} container {t.container})"
    return where


def stop_commands(engine: Any) -> tuple[str, str] | None:
    """(what happens, the commands) for stopping the recorded job; None when there is no job."""
    job = getattr(engine, "job", None)
    if job is None or not getattr(job, "pid", None):
        return None
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


def reboot_command(engine: Any) -> str | None:
    rt: Runtime | None = getattr(engine.transport, "runtime", None)
    if rt is None or not getattr(rt, "in_container", False):
        return None
    return rt.restart_command()

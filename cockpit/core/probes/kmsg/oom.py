"""OOM kills in the host's kernel messages: the ``oom-kill`` finding and :func:`oom_killed`.

``Out of memory: Killed process …`` / ``Memory cgroup out of memory: Killed process …`` is merged
with the ``oom-kill:constraint=…,oom_memcg=/lxc/200,…`` line before it, which names the container
(``/lxc/ID/`` or ``/lxc.payload.ID/``).  Pids in kernel messages are host pids; :func:`oom_killed`
therefore matches by pid *or* by name (the kernel's 15-character ``comm``), after a time and
optionally in one container.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...layers import Finding, Layer, Severity
from .lines import KmsgLine

__all__ = ["oom_context", "oom_kill_finding", "oom_killed"]

_OOM_KILL = re.compile(r"\boom-kill:(?P<kv>\S+)")
_KILLED = re.compile(
    r"(?P<kind>Memory cgroup out of memory|Out of memory(?: \([^)]*\))?)?:?\s*Killed process (?P<pid>\d+) "
    r"\((?P<comm>.*?)\)(?P<rest>.*)$"
)
_RSS = re.compile(r"(?P<k>total-vm|anon-rss|file-rss|shmem-rss):(?P<v>\d+)kB")
_LXC = re.compile(r"/lxc(?:/|\.payload\.)(?P<id>\d+)(?=/|$|,)")


def _kv(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def _container_of(*paths: str | None) -> str | None:
    for p in paths:
        if p:
            m = _LXC.search(p)
            if m:
                return m.group("id")
    return None


def _fmt_kb(kb: int) -> str:
    if kb >= 1048576:
        return f"{kb / 1048576:.1f} GiB"
    if kb >= 1024:
        return f"{kb / 1024:.0f} MiB"
    return f"{kb} KiB"


def _oom_finding(m: re.Match[str], ctx: dict[str, str] | None, ln: KmsgLine) -> Finding:
    pid = int(m.group("pid"))
    comm = m.group("comm")
    rss = {r.group("k"): int(r.group("v")) for r in _RSS.finditer(m.group("rest"))}
    memcg_kind = bool(m.group("kind") and m.group("kind").startswith("Memory cgroup"))
    constraint = ctx.get("constraint") if ctx else None
    container = _container_of(ctx.get("task_memcg") if ctx else None, ctx.get("oom_memcg") if ctx else None)
    anon = rss.get("anon-rss")
    where = f" in container {container}" if container else ""
    if memcg_kind or constraint == "CONSTRAINT_MEMCG":
        why = "its memory cgroup hit its limit"
        advice = (
            "The container's memory limit was reached: raise it (`pct set ID --memory MiB` on Proxmox) or "
            "lower the job's RAM use (dataloader workers, pinned memory, loading weights in full precision)."
        )
    else:
        why = "the host ran out of memory"
        advice = (
            "The whole host ran out of RAM: look for other big consumers on the host and lower the job's RAM "
            "use; add swap or memory."
        )
    summary = f"the OOM killer killed pid {pid} ({comm}){where}: {why}"
    if anon is not None:
        summary += f" (anon-rss {_fmt_kb(anon)})"
    return Finding(
        layer=Layer.CONTAINER,
        kind="oom-kill",
        summary=summary,
        advice=advice,
        severity=Severity.ERROR,
        subject={
            "pid": pid,
            "comm": comm,
            "container": container,
            "constraint": constraint,
            "memcg": bool(memcg_kind or constraint == "CONSTRAINT_MEMCG"),
            "oom_memcg": ctx.get("oom_memcg") if ctx else None,
            "task_memcg": ctx.get("task_memcg") if ctx else None,
            "total_vm_kb": rss.get("total-vm"),
            "anon_rss_kb": anon,
            "file_rss_kb": rss.get("file-rss"),
            "shmem_rss_kb": rss.get("shmem-rss"),
            "uid": int(ctx["uid"]) if ctx and ctx.get("uid", "").isdigit() else None,
            "ts": ln.ts,
            "uptime": ln.uptime,
            "line": ln.text,
        },
    )


def oom_context(msg: str) -> dict[str, str] | None:
    """The ``key=value`` pairs of an ``oom-kill:`` line (which names the memory cgroups), or None."""
    m = _OOM_KILL.search(msg)
    return _kv(m.group("kv")) if m else None


def oom_kill_finding(ln: KmsgLine, ctx: dict[str, str] | None) -> Finding | None:
    """The ``oom-kill`` finding for a ``Killed process`` line, or None when it is not one.

    ``ctx`` is the nearest preceding ``oom-kill:`` line's pairs; it is ignored when it names
    another pid.
    """
    m = _KILLED.search(ln.text)
    if not m:
        return None
    if ctx is not None and ctx.get("pid") not in (None, m.group("pid")):
        ctx = None
    return _oom_finding(m, ctx, ln)


def oom_killed(
    findings: Iterable[Finding],
    pid_or_name: int | str,
    since: float | None = None,
    *,
    container: int | str | None = None,
) -> Finding | None:
    """The latest OOM kill of this process, or None.

    ``pid_or_name``: a host pid (int), or a process name (str; the kernel keeps 15 characters of
    ``comm``, so longer names match on their first 15).  ``since``: only kills at or after this
    epoch time (a kill whose time is unknown does not count when ``since`` is given).
    ``container``: only kills in this container, or whose container is unknown.
    """
    best: Finding | None = None
    for f in findings:
        if f.kind != "oom-kill":
            continue
        s = f.subject
        if isinstance(pid_or_name, int) and not isinstance(pid_or_name, bool):
            if s.get("pid") != pid_or_name:
                continue
        else:
            name = str(pid_or_name)
            comm = str(s.get("comm") or "")
            if not comm or not (name == comm or name[:15] == comm[:15]):
                continue
        if since is not None:
            ts = s.get("ts")
            if ts is None or ts < since:
                continue
        if container is not None and s.get("container") not in (None, str(container)):
            continue
        if best is None or (s.get("ts") or 0) >= (best.subject.get("ts") or 0):
            best = f
    return best

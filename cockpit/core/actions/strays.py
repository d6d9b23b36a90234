"""Copies of the job that cockpit did not start: found before each launch, stopped only when asked.

A *stray* is a process whose command line is the job's (``[job] command`` as argv, that command
under ``sh -c``, or another cockpit's supervisor for it) and whose working directory is the job's
workdir (``/proc/PID/cwd``), outside the process group of the job cockpit recorded (for a job
cockpit adopted: outside that process and its children).  A job left running by another journal,
a deleted ``.cockpit/`` or a manual launch holds the GPUs and, worse, may write where this attempt
reads.

Candidates are found with one ``grep -l`` over ``/proc/*/cmdline`` for the command's most
distinctive word, then matched exactly (argv and cwd) here: never by pattern.  Strays are grouped
by process group; :func:`stop_strays` signals each group after checking its leader's start time
(a reused pid is never signalled): TERM, wait, KILL, each signal to the leader guarded by its start
time again in the same command.  A stray that is PID 1, or whose group is 0 or 1 (a Docker job
running as the container's PID 1: its group lies outside the namespace), is never signalled
(:func:`~.job.unsafe_ids`): the stage says so and names what can stop it.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import time
from dataclasses import dataclass, field
from typing import Any

from ..layers import Layer, Verdict
from ..procstat import read_stat
from .base import ActionContext, StageFailed, VerdictBuilder
from .jobrecord import JobRecord, signal_group, unsafe_ids
from .proctable import ps_table

__all__ = ["Stray", "find_strays", "strays_command", "stop_strays", "describe_strays", "strays_stage", "refusal"]

CLK_TCK = 100


@dataclass
class Stray:
    """One copy of the job (a process group) that cockpit did not start."""

    pgid: int
    pids: list[int] = field(default_factory=list)
    leader: int = 0
    start_time: int | None = None
    age_s: float | None = None
    command: str = ""
    gpu_mib: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"pgid": self.pgid, "pids": self.pids, "leader": self.leader, "age_s": None if self.age_s is None else round(self.age_s, 1),
                "command": self.command, "gpu_mib": self.gpu_mib}


def _needle(command: str) -> str:
    """The command's longest word (its longest line: grep reads a newline as two patterns)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    word = max(words, key=len) if words else command
    return max(word.split("\n"), key=len)


def _octal(text: str) -> str:
    """``text`` as a printf format of octal escapes only: the command line that carries it does not
    hold the text itself, so the scan's own shell is no candidate."""
    return "'" + "".join(f"\\{b:03o}" for b in os.fsencode(text)) + "'"


def _matches(argv: list[str], command: str) -> bool:
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    if argv == words:
        return True
    if len(argv) >= 3 and argv[1] == "-c" and argv[0].rsplit("/", 1)[-1] in ("sh", "bash", "dash"):
        if argv[2] == command:
            return True
        if "cockpit-job" in argv[3:4] and argv[-1] == command:  # another cockpit's supervisor
            return True
    return False


def _own(own: JobRecord | None, pid: int, ppid: int, pgid: int, start_time: int) -> bool:
    """A process of the job cockpit recorded: in its process group (a launched job leads its own),
    or, for an adopted job (:mod:`.adopt`), the adopted process itself (its pid and start time) or
    a child of it: an adopted job may share the group of the shell that started it."""
    if own is None:
        return False
    if own.pgid is not None and own.pgid > 1 and pgid == own.pgid:
        return True
    if own.adopted and own.pid is not None:
        return (pid == own.pid and own.start_time in (None, start_time)) or ppid == own.pid
    return False


def strays_command(command: str) -> str:
    """The scan: ``/proc/uptime``, then for each process whose command line holds the command's
    most distinctive word its pid, cwd, stat line and argv.  The word reaches ``grep`` through a
    variable made by ``printf`` from octal escapes, so no shell of the scan's own is a candidate
    (only ``grep``, gone by the time the loop looks, skipped by a built-in test); the uptime and the
    stat lines are read by the ``read`` built-in: the forks left are one ``readlink`` and one ``tr`` per candidate."""
    return (
        f"n=$(printf {_octal(_needle(command))}); read -r u < /proc/uptime; echo \"$u\"; echo @@; "
        "for f in $(grep -laF -- \"$n\" /proc/[0-9]*/cmdline 2>/dev/null); do "
        "d=${f%/cmdline}; [ -d \"$d\" ] || continue; echo \"@@p ${d#/proc/}\"; readlink \"$d/cwd\" 2>/dev/null || echo; "
        "{ read -r s < \"$d/stat\" && printf '%s\\n' \"$s\"; } 2>/dev/null || echo; tr '\\0' '\\037' < \"$f\" 2>/dev/null; echo; done"
    )


async def find_strays(ctx: ActionContext, command: str, workdir: str, own: JobRecord | None) -> list[Stray]:
    """Copies of ``command`` running in ``workdir`` outside ``own``'s process group."""
    if not command.strip():
        return []
    res = await ctx.run(strays_command(command), timeout=15)  # answered already when it rode in stop's last look
    text = res.text
    head, _, body = text.partition("@@\n")
    try:
        uptime = float(head.split()[0])
    except (IndexError, ValueError):
        uptime = None
    groups: dict[int, Stray] = {}
    for block in body.split("@@p ")[1:]:
        lines = block.split("\n")
        if len(lines) < 4 or not lines[0].strip().isdigit():
            continue
        pid, cwd, stat = int(lines[0]), lines[1].strip(), read_stat(lines[2])
        argv = [a for a in lines[3].split("\x1f") if a != ""]
        if stat is None or stat.state.startswith("Z") or cwd.rstrip("/") != workdir.rstrip("/") or not _matches(argv, command):
            continue
        if _own(own, pid, stat.ppid, stat.pgid, stat.start_time):
            continue
        s = groups.setdefault(stat.pgid, Stray(stat.pgid))
        s.pids.append(pid)
        if not s.leader or pid == stat.pgid or (stat.start_time < (s.start_time or stat.start_time + 1)):
            s.leader, s.start_time, s.command = pid, stat.start_time, " ".join(argv)[:200]
            s.age_s = (uptime - stat.start_time / CLK_TCK) if uptime is not None else None
    return list(groups.values())


def describe_strays(strays: list[Stray]) -> str:
    parts = []
    for s in strays:
        age = f", running {s.age_s / 60:.0f} min" if s.age_s is not None and s.age_s >= 60 else (f", running {s.age_s:.0f}s" if s.age_s is not None else "")
        gpu = f", {s.gpu_mib:.0f} MiB GPU memory" if s.gpu_mib else ""
        parts.append(f"pid {s.leader} (group {s.pgid}, {len(s.pids)} process{'es' if len(s.pids) > 1 else ''}{age}{gpu})")
    n = len(strays)
    return f"{n} cop{'ies' if n > 1 else 'y'} of the job that cockpit did not start: " + "; ".join(parts)


def refusal(s: Stray) -> str | None:
    """Why this stray is never signalled (its leader is PID 1, its group 0 or 1), or None."""
    return unsafe_ids(s.leader, s.pgid)


async def stop_strays(ctx: ActionContext, strays: list[Stray], timeout: float) -> list[Stray]:
    """TERM → wait → KILL each stray group whose leader is still the same process; returns those left.
    Strays :func:`refusal` refuses are skipped (never signalled); the caller reports them."""
    targets = []
    for s in strays:
        if refusal(s) is not None:
            continue
        res = await ctx.run(f"cat /proc/{int(s.leader)}/stat 2>/dev/null", timeout=5)
        st = read_stat(res.text)
        if st is None or st.start_time != s.start_time:
            continue  # already gone, or the pid now belongs to someone else: never signal it
        targets.append((s, JobRecord(pid=s.leader, pgid=s.pgid, start_time=s.start_time)))
    for _, rec in targets:
        await ctx.run(signal_group("TERM", rec, start_time=rec.start_time), timeout=5)  # CONT follows: a stopped copy gets it
    left = await _wait(ctx, targets, timeout)
    if left:
        for _, rec in left:
            await ctx.run(signal_group("KILL", rec, start_time=rec.start_time), timeout=5)
        left = await _wait(ctx, left, 5.0)
    return [s for s, _ in left]


async def _wait(ctx: ActionContext, targets: list[tuple[Stray, JobRecord]], timeout: float) -> list[tuple[Stray, JobRecord]]:
    deadline = time.monotonic() + timeout
    while True:
        live = {pgid for _pid, _ppid, pgid, state, _comm in await ps_table(ctx) if not state.startswith("Z")}
        left = [(s, r) for s, r in targets if s.pgid in live]
        if not left or time.monotonic() >= deadline:
            return left
        await asyncio.sleep(0.1)


async def strays_stage(ctx: ActionContext, own: JobRecord | None, verdict: Verdict, policy: str) -> list[Stray]:
    """The stop action's last stage: find strays and handle them as ``[job] strays`` says."""
    vb = VerdictBuilder(ctx, "stop", [("strays", Layer.PROCESS)], verdict)
    found: list[Stray] = []
    async with vb.stage("strays") as st:
        rt = ctx.transport.runtime
        if not rt.looks_for_strays:  # a login node runs no jobs: the scheduler owns them
            st.skip(rt.strays_skip)
            return found
        found = await find_strays(ctx, ctx.cfg.job.command, ctx.cfg.job.workdir, own)
        if not found:
            st.ok("no copy of the job that cockpit did not start")
            return found
        text = describe_strays(found)
        data = [s.to_dict() for s in found]
        refused = [(s, why) for s in found if (why := refusal(s)) is not None]
        never = ("; ".join(f"pid {s.leader} (group {s.pgid}) is never signalled: {why}" for s, why in refused)
                 if refused else "")
        stop_them = policy == "stop"
        if policy == "ask" and ctx.ask is not None and len(refused) < len(found):
            stop_them = await ctx.ask("Stop copies of the job that cockpit did not start?",
                                      f"{text}.\nThey run the job's command in its workdir; stopping sends TERM, then KILL, to each group."
                                      + (f"\n{never}." if never else ""))
        if not stop_them:
            hint = "strays = \"stop\" or --stop-strays stops them" if policy != "leave" else "strays = \"leave\""
            st.ok(f"{text}: left running ({hint})" + (f"; {never}" if never else ""), strays=data, strays_action="left")
            return found
        left = await stop_strays(ctx, [s for s in found if refusal(s) is None], ctx.cfg.job.stop_timeout)
        problems = [never] if never else []
        if left:
            problems.append(f"could not stop {describe_strays(left)}")
        if problems:
            where = "the container's main process: stop it from the host (docker/podman stop, pct stop) or start the container with another command"
            raise StageFailed(Layer.CONTAINER, "; ".join(problems),
                              advice=(f"a copy that is PID 1 or outside the container's process groups is {where}" if refused
                                      else "a process that ignores KILL is stuck in the kernel; reboot the container"),
                              data={"strays": data, "refused": [s.leader for s, _ in refused]})
        st.ok(f"stopped {text}", strays=data, strays_action="stopped")
    return found

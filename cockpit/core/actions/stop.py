"""Stop the job cockpit launched, and prove nothing of it is left.

Identity first, always: the recorded pid's start time (``/proc/PID/stat`` field 22) must still be the
one launch recorded, and the recorded pid and process group must be ones that can be signalled at all
(:func:`~.job.unsafe_ids`: never PID 1, never group 0 or 1, never a missing one).  A record that fails
either is refused with a message, never signalled.  A process counts as the job's when it is in the
job's process group, or when it *is* the recorded pid with the recorded start time: a pid reused by
another process is never the job's, so it is neither waited for, nor signalled, nor reported.

What the job started in a session of its own (``setsid``, ``Popen(start_new_session=True)``: a
wrapper shielding its trainer from the terminal) is the job's while it is still a descendant of
the job's processes: it is signalled with them, its own group, guarded by its start time
(:func:`_own_sessions`).  A daemon that double-forked has left that tree and is never signalled.

TERM (and CONT, so that a stopped job gets its TERM and may act on it: a checkpoint, say) → wait
``stop_timeout`` → KILL → wait; each signal to the leader pid is guarded by its start
time in the same shell command (:func:`~.job.signal_group`), so a pid reused during the wait is never
KILLed.

Zombies are judged by persistence.  Right after the kill, the job's processes are briefly ``Z``
until their new parent (PID 1, or a parent that is itself exiting) reaps them: every zombie of the
job is re-checked for ``[job] zombie_grace`` seconds (2 by default) and only one that outlives it is
a finding.  PID 1 is said not to reap only on evidence: a zombie of PID 1 that outlived the grace.
A ``Zl`` that was already a zombie before stop sent anything, and whose process is older than the
grace, is named at once: its live threads are stuck in the kernel, no reaper can take it.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..layers import Layer, Stage, Status, Verdict
from ..probes.procs.zombies import ZOMBIE_GRACE, zombie_grace
from ..procstat import ProcStat, read_stat
from .base import ActionContext, StageFailed, VerdictBuilder
from .jobrecord import KNOWN_REAPERS, JobRecord, signal_group, start_time_guard, unsafe_ids

__all__ = ["stop", "STOP_PLAN", "ZOMBIE_GRACE", "zombie_grace", "proc_table"]

STOP_PLAN = [("identify job", Layer.PROCESS), ("terminate", Layer.PROCESS), ("nothing left", Layer.CONTAINER)]

CLK_TCK = 100


@dataclass
class Table:
    """One read of the target's process table, with its uptime (for process ages)."""

    procs: list[ProcStat]
    uptime: float | None
    at: float  # monotonic time of the read

    def by_pid(self) -> dict[int, ProcStat]:
        return {p.pid: p for p in self.procs}

    def age(self, p: ProcStat) -> float | None:
        return None if self.uptime is None else self.uptime - p.start_time / CLK_TCK


PROC_TABLE = "cat /proc/uptime; cat /proc/[0-9]*/stat 2>/dev/null"


async def proc_table(ctx: ActionContext, *, riders: bool = False) -> Table:
    """Every process in the target from /proc (no procps needed), and /proc/uptime: reads of
    ``/proc/PID/stat`` cannot block, so a cheap frame (no watchdog forked).  ``riders``: the
    commands later stages let ride go in the same round trip (:meth:`~.base.ActionContext.run_many`)."""
    res = (await ctx.run_many([PROC_TABLE], timeout=10, cheap=True))[0] if riders else await ctx.run_cheap(PROC_TABLE, timeout=10)
    return _parse_table(res.text)


def _zombie(p: ProcStat) -> bool:
    return p.state.startswith("Z")


def _zl(p: ProcStat) -> bool:
    """A zombie leader whose other threads live on (``ps`` shows ``Zl``; ``/proc/PID/stat`` has
    only ``Z`` and the thread count)."""
    return _zombie(p) and (p.threads > 1 or "l" in p.state[1:])


def _state(p: ProcStat) -> str:
    """The state as ``ps`` would show it: ``Zl`` for a zombie with live threads."""
    return "Zl" if _zl(p) and "l" not in p.state else p.state


def _mine(table: Table, job: JobRecord) -> list[ProcStat]:
    """The job's processes: its process group and session (the supervisor leads both: a process
    that made its own group in it is still the job's), and its pid while the start time is the recorded one."""
    return [p for p in table.procs if job.pgid in (p.pgid, p.sid) or (p.pid == job.pid and p.start_time == job.start_time)]


def _key(p: ProcStat) -> tuple[int, int]:
    return p.pid, p.start_time


async def stop(ctx: ActionContext, job: JobRecord | None, verdict: Verdict | None = None, *,
               identified: Callable[[bool], Awaitable[None]] | None = None) -> Verdict:
    """Stop the recorded job: TERM → wait → KILL → wait, then prove nothing of it is left.

    ``identified(leader_alive)`` is awaited once the job's processes are known, before any signal
    (not for a scheduler's job, nor when the record cannot name the job)."""
    sched = ctx.transport.runtime.scheduler  # a runtime whose scheduler stops its jobs (Slurm)
    if sched is not None:
        return await sched.stop(ctx, job, verdict)
    vb = VerdictBuilder(ctx, "stop", STOP_PLAN, verdict)
    timeout = ctx.cfg.job.stop_timeout
    members: list[ProcStat] = []
    extra: list[ProcStat] = []  # what the job started in sessions of their own, still its children
    before: Table | None = None
    async with vb.stage("identify job") as st:
        if job is None or job.pid is None:
            st.skip("no job recorded by cockpit: nothing to stop")
            return vb.finish()
        why = unsafe_ids(job.pid, job.pgid)
        if why is not None:
            st.skip(f"job pid {job.pid} (group {job.pgid}) not signalled: {why}; the record cannot name the job, "
                    "so nothing is matched against it")
            return vb.finish()
        if job.start_time is None:
            # never signal without proof of identity: a job that exited at once left no start time
            st.skip(f"job pid {job.pid} (group {job.pgid}) has no recorded start time: not signalled "
                    "(nothing proves it is still the job)")
            return vb.finish()
        before = await proc_table(ctx)  # the leader's own stat line is in it: one read
        stat = before.by_pid().get(int(job.pid))
        if stat is not None and stat.start_time != job.start_time:
            st.skip(f"pid {job.pid} now belongs to another process (start time {stat.start_time} ≠ {job.start_time}): the job is long gone")
            return vb.finish()
        members = _mine(before, job)
        extra = _own_sessions(before, job)
        if identified is not None:
            await identified(stat is not None and not _zombie(stat))
        live = [p for p in members if not _zombie(p)]
        if not members and not extra:
            st.skip(f"job (pid {job.pid}, group {job.pgid}) already exited")
        else:
            theirs = f" (launched by target {job.target})" if job.target and job.target != ctx.cfg.display_name else ""
            st.ok(f"job pid {job.pid}, group {job.pgid}{theirs}: {len(live)} live, {len(members) - len(live)} zombie" + _own_note(extra),
                  own_sessions=[p.pid for p in extra])
    if vb.failed:
        return vb.finish()
    assert job is not None and before is not None

    if any(not _zombie(p) for p in members) or extra:
        async with vb.stage("terminate") as st:
            if job.unit:
                await ctx.run(f"systemctl stop --no-block {shlex.quote(job.unit)}", timeout=10)
            left = await _wait_gone(ctx, job, timeout, await _signal_and_look(ctx, "TERM", job, extra), extra)
            how = "TERM"
            if left:
                # the leader's start time is checked again in the KILL command itself: its pid may
                # have been reused during stop_timeout
                left = await _wait_gone(ctx, job, 5.0, await _signal_and_look(ctx, "KILL", job, extra), extra)
                how = f"KILL after {timeout:g}s of TERM"
            if left:
                still = ", ".join(f"{p.pid} ({p.comm}, {_state(p)})" for p in left)
                raise StageFailed(Layer.CONTAINER, f"still running after KILL: {still}", advice="a process that ignores KILL is stuck in the kernel; reboot the container")
            st.ok(f"stopped with {how}" + (f", with {len(extra)} process{'es' if len(extra) != 1 else ''} it started in a session "
                                           f"of {'their' if len(extra) != 1 else 'its'} own" if extra else ""))
        if vb.failed:
            return vb.finish()
    else:
        vb.add(Stage("terminate", Status.SKIPPED, Layer.PROCESS, "no live process to signal"))

    async with vb.stage("nothing left") as st:
        await _nothing_left(ctx, job, before, extra, st)
    return vb.finish()


#: the first look again after a signal comes this soon, then each wait doubles up to POLL_MAX_S: a
#: job that dies at TERM is seen gone within milliseconds (a cheap read of the table), not a tick later
POLL_FIRST_S = 0.01
POLL_MAX_S = 0.1


#: built-in reads of the leader's stat line after the signal, in the same command, before the table
#: is read (a few us each: a job that dies at once is seen gone in the signal's own round trip)
SPIN = 300


def _parse_table(text: str) -> Table:
    lines = text.splitlines()
    uptime: float | None = None
    try:
        uptime = float(lines[0].split()[0]) if lines and "(" not in lines[0] else None
    except (IndexError, ValueError):
        uptime = None
    procs = [st for st in (read_stat(line) for line in lines) if st is not None]
    return Table(procs, uptime, time.monotonic())


def _signal_own(sig: str, p: ProcStat) -> str:
    """``sig`` to a process the job started in a session of its own, and to its group when it
    leads one, only while its start time is the one seen (checked in the same command); TERM is
    followed by CONT, as :func:`~.jobrecord.signal_group` does."""
    target = f"-- -{int(p.pid)}" if p.pgid == p.pid else str(int(p.pid))
    text = f"{start_time_guard(p.pid, p.start_time)} && kill -s {sig} {target} 2>/dev/null; true"
    return f"{text}; {_signal_own('CONT', p)}" if sig == "TERM" else text


async def _signal_and_look(ctx: ActionContext, sig: str, job: JobRecord, extra: Sequence[ProcStat] = ()) -> Table:
    """``sig`` to the job (:func:`~.jobrecord.signal_group`, its leader guarded by its start time)
    and to what it started in sessions of their own (``extra``), then, in the same round trip, a
    short wait for the leader to go (built-ins only) and the first look at the table: kill and
    /proc reads, a cheap frame."""
    p = int(job.pid or 0)
    spin = (f"i=0; while [ $i -lt {SPIN} ] && read -r l 2>/dev/null </proc/{p}/stat; do "
            f"case \"${{l##*) }}\" in Z*) break;; esac; i=$((i+1)); done")
    own = "".join(f"{_signal_own(sig, x)}; " for x in extra)
    res = await ctx.run_cheap(f"{own}{signal_group(sig, job, start_time=job.start_time)}; {spin}; {PROC_TABLE}", timeout=5)
    return _parse_table(res.text)


async def _wait_gone(ctx: ActionContext, job: JobRecord, timeout: float, first: Table | None = None,
                     extra: Sequence[ProcStat] = ()) -> list[ProcStat]:
    """Live (non-zombie) processes of the job, and of ``extra``, left after waiting up to
    ``timeout`` seconds (``first``: the first look, already read)."""
    deadline = time.monotonic() + timeout
    pause = POLL_FIRST_S
    keys = {_key(x) for x in extra}
    while True:
        table, first = first or await proc_table(ctx), None
        live = [p for p in _mine(table, job) if not _zombie(p)]
        live += [p for p in table.procs if _key(p) in keys and not _zombie(p)]
        if not live or time.monotonic() >= deadline:
            return live
        await asyncio.sleep(pause)
        pause = min(POLL_MAX_S, pause * 2)


def _own_sessions(table: Table, job: JobRecord) -> list[ProcStat]:
    """Live processes the job started in a session of their own (``setsid``,
    ``Popen(start_new_session=True)``: a wrapper shielding its trainer from the terminal's signals),
    still descendants of its processes in ``table``: the job's in life, so stopped with it.  A
    daemon that double-forked has left the tree (its parent is PID 1): not the job's, not here."""
    kids: dict[int, list[ProcStat]] = {}
    for p in table.procs:
        kids.setdefault(p.ppid, []).append(p)
    mine = {p.pid for p in _mine(table, job)}
    todo, out = list(mine), []
    while todo:
        for c in kids.get(todo.pop(), []):
            if c.pid not in mine and not _zombie(c):
                mine.add(c.pid)
                out.append(c)
                todo.append(c.pid)
    return [p for p in out if job.pgid not in (p.pgid, p.sid) and p.pid > 1 and p.pgid > 1]


def _own_note(extra: list[ProcStat]) -> str:
    if not extra:
        return ""
    names = ", ".join(f"pid {p.pid} ({p.comm})" for p in extra[:8])
    return f"; and {len(extra)} process{'es' if len(extra) != 1 else ''} it started in a session of {'their' if len(extra) != 1 else 'its'} own: {names}"


def _left_session(extra: list[ProcStat], table: Table) -> list[ProcStat]:
    """Of what the job started in sessions of their own (``extra``, :func:`_own_sessions` before
    stop), what is still alive after stop signalled it."""
    now = {_key(p) for p in table.procs if not _zombie(p)}
    return [p for p in extra if _key(p) in now]


def _left_note(left: list[ProcStat]) -> str:
    if not left:
        return ""
    names = ", ".join(f"pid {p.pid} ({p.comm})" for p in left[:8])
    n = len(left)
    return (f"; {n} process{'es' if n != 1 else ''} it started in a session of {'their' if n != 1 else 'its'} own "
            f"live{'s' if n == 1 else ''} on after its signals: {names}")


async def _nothing_left(ctx: ActionContext, job: JobRecord, before: Table, extra: list[ProcStat], st: Any) -> None:
    grace = zombie_grace(ctx.cfg)
    table = await proc_table(ctx, riders=True)  # the job is gone or going: the strays scan may ride here
    mine = _mine(table, job)
    if not mine:
        left = _left_session(extra, table)
        if left:
            st.ok("no process of the job's group or session is left" + _left_note(left), left_running=[p.pid for p in left])
        else:
            st.ok("no process of the job is left")
        return
    zombies_before = {_key(p) for p in _mine(before, job) if _zombie(p)}

    def at_once(p: ProcStat) -> bool:
        # the seed's Zl: a zombie already before stop sent anything, old enough, with live threads
        age = table.age(p)
        return _key(p) in zombies_before and _zl(p) and age is not None and age >= grace

    keys = {_key(p) for p in mine}
    # every fresh zombie is re-checked: PID 1 (the usual parent of a killed job's orphans), a parent
    # that is itself exiting, or any live parent may be about to reap it
    waiting = {_key(p) for p in mine if _zombie(p) and not at_once(p)}
    pid1_kids = {_key(p) for p in table.procs if _zombie(p) and p.ppid == 1 and _key(p) not in keys}
    t0 = table.at
    waited = 0.0
    if waiting:
        pause = POLL_FIRST_S
        while True:
            now_left = {_key(p) for p in _mine(table, job)} & waiting
            waited = table.at - t0
            if not now_left or waited >= grace:
                break
            await asyncio.sleep(min(pause, max(0.0, grace - waited)))
            pause = min(POLL_MAX_S, pause * 2)
            table = await proc_table(ctx)
        mine = _mine(table, job)
    reaped = len(waiting - {_key(p) for p in mine})
    if not mine:
        st.ok(f"no process of the job is left ({reaped} zombie{'s' if reaped != 1 else ''} reaped within "
              f"{waited:.1f}s of the check)" + _left_note(_left_session(extra, table)), reaped_zombies=reaped, waited_s=round(waited, 2))
        return
    raise _leftovers(ctx, job, table, mine, waiting, pid1_kids, grace, waited)


def _leftovers(ctx: ActionContext, job: JobRecord, table: Table, mine: list[ProcStat], waiting: set[tuple[int, int]],
               pid1_kids: set[tuple[int, int]], grace: float, waited: float) -> StageFailed:
    """The failure for what is left: each zombie with its parent, what is stuck, and what PID 1 does."""
    by_pid = table.by_pid()
    pid1 = by_pid.get(1)
    name = pid1.comm if pid1 is not None else "?"
    reaps_by_name = name in KNOWN_REAPERS
    outlived = waited >= grace
    zombies = [p for p in mine if _zombie(p)]
    stuck = [p for p in mine if _zl(p) or not _zombie(p)]  # D, Zl, or anything alive after KILL
    # evidence that PID 1 does not reap: a zombie of it outlived the grace (the job's, or another one)
    persisted_1 = [p for p in zombies if p.ppid == 1 and _key(p) in waiting and outlived and not _zl(p)]
    others_1 = [p for p in table.procs if _key(p) in pid1_kids and outlived]
    not_reaping = bool(persisted_1 or others_1)
    parts = []
    for p in zombies:
        parent = by_pid.get(p.ppid)
        pname = parent.comm if parent else "?"
        held = f" for {waited:.1f}s" if _key(p) in waiting and outlived else ""
        if _zl(p):  # nobody can reap it while its threads live
            parts.append(f"pid {p.pid} ({p.comm}) is a zombie ({_state(p)}) whose other threads still live{held}")
        else:
            parts.append(f"pid {p.pid} ({p.comm}) is a zombie ({_state(p)}), parent {p.ppid} ({pname}) has not reaped it{held}")
    if stuck:
        parts.append("stuck in the kernel: " + ", ".join(f"{p.pid} ({_state(p)})" for p in stuck))
    rt = ctx.transport.runtime
    engine = rt.zombie_engine  # docker or podman: `run --init` gives the container a reaping PID 1
    again = rt.restart_word
    if not_reaping:
        what = (f"{len(others_1)} other zombie child{'ren' if len(others_1) != 1 else ''} of it outlived {grace:g}s too"
                if others_1 and not persisted_1
                else f"{len(persisted_1)} zombie child{'ren' if len(persisted_1) != 1 else ''} of it outlived {grace:g}s")
        reap_note = (f"PID 1 is {name}, which should reap orphans, but does not ({what}): it is not calling wait(); "
                     if reaps_by_name else f"PID 1 is {name}, not a known reaping init, and does not reap ({what}): ")
        reap_note += f"only a {again} of the container (or the parent's death) clears it"
        if engine is not None:
            reap_note += f"; start it with `{engine} run --init` so PID 1 reaps"
    elif any(p.ppid != 1 and not _zl(p) for p in zombies):
        reap_note = f"ending its parent hands it to PID 1 ({name}{', which reaps orphans' if reaps_by_name else ''})"
    else:
        reap_note = ""
    if not_reaping or stuck:
        advice = f"{again} the container (cockpit reboot) before the next launch"
    else:
        advice = "end the zombie's parent (or wait for it to call wait()): a dead process cannot be killed"
    return StageFailed(
        Layer.CONTAINER, "; ".join(parts) + (f". {reap_note}" if reap_note else ""),
        advice=advice,
        data={"zombies": [p.pid for p in zombies], "pid1": name, "pid1_reaps": reaps_by_name and not not_reaping,
              "zombie_grace_s": grace, "waited_s": round(waited, 2)},
    )

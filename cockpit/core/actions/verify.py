"""Verify a launched job in stages, with deadlines from config.

spawned → alive → log created → log growing → progress → **settled**.

``passed`` needs the job *healthy*, not "seen once": alive (its own main process, not the
supervisor shell), progressing (the ``progress_pattern`` seen, or ``healthy_after`` seconds without
a crash when there is none), **no error-severity signature anywhere in this attempt's log** (a
worker thread's traceback counts while the process lives on), and all of that still true at the end
of ``[verify] settle`` seconds after the first progress.  A job that needs minutes to load a model
is ``pending``, not failed, until ``startup_timeout``.

The verdict does not depend on how the job's lines interleave: an error that appears before,
between or after progress lines fails the attempt the same way (``progress`` fails when no
progress was seen yet, ``settled`` otherwise), naming every thread that died.  After the first
error, reading goes on for :data:`ERROR_GRACE_S` so the other threads' tracebacks are named too.

A training loop that died while the process lives on (the main thread's uncaught exception, its
other threads holding the process: :mod:`.loopdeath`) fails ``alive``: the pid lives, the job does
not.  Reading goes on until that death counts (:data:`~.loopdeath.LOOP_CONFIRM_S`), so a process
that merely takes a moment to exit after its traceback is judged by its exit instead.

A job that is gone is never judged from the one reading that first saw it gone: without an exit
status it is read again for :data:`GONE_CONFIRM_S` (its supervisor writes the status a moment
after the death), and while its main process waits for its supervisor to reap it
(:attr:`~.jobstate.JobState.reaping`) for up to ``[job] zombie_grace``; no other reason to stop
reading (the settle window's end, an error, ``wait=False``) judges such a reading.

``wait=False`` (``cockpit verify``) judges the job **as it is now**, from one reading of its
processes and of its whole log (more only while a death is confirmed, above): alive and healthy →
ok; dead → fail with the cause (:mod:`.cause`), when it died relative to the launch and to its
last progress line.

Each reading is *one* command through the persistent session (:mod:`.jobstate`).

A live job that passes with a GPU lost, or a GPU Xid since its launch (:mod:`.gpufault`), gets a
``gpu`` stage after ``settled``: ok (it may train on other GPUs), naming the GPU and what was said.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..compile_follow import follower_for
from ..compile_report import failure_words, unsuppressed_failures
from ..layers import GPU_NOTE_STAGE, Evidence, Layer, Stage, Status, Verdict
from ..outcome import code_ran, last_words, said_ended, said_failed
from ..probes.procs.zombies import zombie_grace
from ..remote.base import RemoteError
from .adopt import job_reader as reader_for  # adopted jobs too (no pid or exit file of cockpit's)
from .base import ActionContext, StageFailed, VerdictBuilder
from .cause import death_cause, error_cause, fmt_secs
from .causebase import LOST_LOG, progress_lost
from .elsewhere import elsewhere
from .forked import watching
from .gpufault import GPU_LEAD_S, GpuPrefetch, gpu_note
from .job import JobRecord, describe_exit
from .jobstate import JobReader, JobState, LogScan, error_dict, make_scan
from .left_out import left_out_cause
from .loopdeath import ended_with, find_loop_death, loop_death_cause, note_loop_death, unconfirmed_s
from .nonfinite import ADVICE as DIVERGED_ADVICE
from .progress_wake import ProgressWake
from .reattach import TargetLost, read_job
from .stall import STUCK_D_S, detect_stall, judged_stall, sampled_main, stall_threshold, stall_unknown, stopped_words
from .startclock import Deadline, StartupClock, no_progress
from .survivors import gone_cause, leftovers_note, pipeline_note

__all__ = ["verify", "VERIFY_PLAN", "LogScan", "error_dict", "ERROR_GRACE_S"]

VERIFY_PLAN = [
    ("spawned", Layer.PROCESS),
    ("alive", Layer.PROCESS),
    ("log created", Layer.PROCESS),
    ("log growing", Layer.PROCESS),
    ("progress", Layer.APP),
    ("settled", Layer.APP),
]

#: first poll interval; it grows by half each tick up to TICK_MAX_S (a fast job is seen fast,
#: a job that loads a model for minutes costs a probe every half second)
TICK_S = 0.05
TICK_MAX_S = 0.5
#: for this long after launch the interval stays at most TICK_FAST_MAX_S: most jobs show their first
#: progress within seconds, and each tick of delay there is added to every attempt
FAST_WINDOW_S = 10.0
TICK_FAST_MAX_S = 0.1
#: after the first error, keep reading this long so every dying thread is named
ERROR_GRACE_S = 0.3
#: a job gone without an exit status is confirmed over this long: its supervisor writes the
#: status a moment after the job's death, and a reading can fall in between
GONE_CONFIRM_S = 0.5
#: the pace of the readings while a job that is gone is confirmed (or its supervisor reaps it)
GONE_TICK_S = 0.2


class _Watch:
    """What the waiting loop learned: when progress and errors were first seen, how long D lasted."""

    def __init__(self, zombie_grace: float = GONE_CONFIRM_S) -> None:
        #: how long a leader its supervisor has yet to reap is read again before its death is judged
        self.zombie_grace = max(GONE_CONFIRM_S, zombie_grace)
        self.progress_at: float | None = None
        self.error_at: float | None = None
        #: since when the main process has been in D (or stopped: T, t), and which of them
        self.d_since: float | None = None
        self.d_state = ""
        self.gone_since: float | None = None
        #: since when a late reader that could not date the last progress follows the job (:mod:`.backlog`)
        self.undated_since: float | None = None
        #: faults survived while watching (a lost connection, a dead shell), said in the verdict
        self.notes: list[str] = []
        #: the main-thread traceback in the log was a process's that exited since (:func:`.loopdeath.ended_with`)
        self.loop_ended = False

    def settled_death(self, st: JobState, now: float) -> bool:
        """The job is dead for sure: its exit status is written, or it has been gone a while without one."""
        if st.exit_code is not None:
            return True
        if st.alive or not st.spawned or st.queued:
            self.gone_since = None
            return False
        self.gone_since = self.gone_since if self.gone_since is not None else now
        return now - self.gone_since >= (self.zombie_grace if st.reaping else GONE_CONFIRM_S)

    def note(self, st: JobState, scan: LogScan, now: float, healthy_at: float, has_marker: bool, log_seen: bool) -> None:
        lead = st.leader
        if lead is not None and lead.state.startswith(("D", "T", "t")):  # stuck in the kernel, or stopped
            self.d_since = self.d_since if self.d_since is not None and lead.state[:1] == self.d_state else now
            self.d_state = lead.state[:1]
        else:
            self.d_since = None
        if self.error_at is None and scan.errors():
            self.error_at = now
        if self.progress_at is None:
            if scan.progress_line is not None or (not has_marker and st.alive and now >= healthy_at and log_seen):
                self.progress_at = now


async def verify(ctx: ActionContext, job: JobRecord, verdict: Verdict | None = None, *, wait: bool = True,
                 reader: JobReader | None = None) -> Verdict:
    """Check the job; with ``wait`` keep checking until a definite answer or a deadline."""
    cfg = ctx.cfg
    vb = VerdictBuilder(ctx, "verify", VERIFY_PLAN, verdict)
    reader = reader if reader is not None else reader_for(ctx, job, make_scan(cfg))
    scan = reader.scan
    ctx.log_scan = scan
    ctx.job_reader = reader
    started = job.launched_at or time.time()
    clock = StartupClock(cfg, ctx.transport, job, started)  # from launch, or from the first compile's end
    healthy_at = started + cfg.job.healthy_after
    settle = cfg.verify.settle
    has_marker = scan.progress_re is not None
    w = _Watch(zombie_grace(cfg))
    wake = ProgressWake(ctx, job)
    tick = TICK_S
    gpus = GpuPrefetch(ctx, job.launched_at)
    reader.connects = ctx.transport.connects  # a link another reading rebuilt between two of verify's is said (:func:`.read_job`)
    try:
        while True:
            try:
                st = await read_job(ctx, reader, vb, w.notes)
            except RemoteError as e:  # the target stayed away (reconnecting did not help): say where, judge nothing
                vb.add(Stage("alive", Status.FAIL, e.layer, f"lost the target while verifying: {e.message}", evidence=e.evidence(), advice=e.hint,
                             data={"lost": True} if isinstance(e, TargetLost) else {}))
                return vb.finish()
            now = time.time()
            dl = await clock.at(now)
            w.note(st, scan, now, healthy_at, has_marker, reader.log_seen)
            if wait and st.alive and w.progress_at is not None and now >= w.progress_at + settle - GPU_LEAD_S:
                gpus.start()  # the GPUs read before the window ends, beside the last readings (:class:`.GpuPrefetch`)
            # the main thread died and the process lives on: wait until that counts (or the process exits)
            ld = note_loop_death(reader, find_loop_death(scan, now))
            w.loop_ended = ld is not None and ended_with(reader, ld, st)  # its writer exited: no held loop (:mod:`.loopdeath`)
            loop_pending = st.alive and w.error_at is not None and unconfirmed_s(ld, now) > 0
            # a backlog whose last progress has no time of its own: follow one stall window before judging
            undated = st.alive and not st.queued and stall_unknown(cfg.verify.stall_after, scan.clock, now, job.launched_at) is not None
            if undated and w.undated_since is None:
                w.undated_since = now
            if watching(reader, st):  # what its main process started may train on after its exit (:mod:`.forked`)
                await asyncio.sleep(GONE_TICK_S)
                continue
            if w.settled_death(st, now):
                break
            if w.gone_since is not None:  # gone, not yet for sure (its exit status may be a moment away): no verdict on this reading
                _announce_wait(vb, cfg, st, scan, w, started, dl)
                await asyncio.sleep(min(tick, GONE_TICK_S))
                continue
            if not wait and not loop_pending and not undated:
                break
            if _diverged(cfg, scan) is not None and w.progress_at is not None and not loop_pending:
                break
            if w.error_at is not None and now - w.error_at >= ERROR_GRACE_S and (st.alive or w.gone_since is None) and not loop_pending:
                break
            if (w.progress_at is not None and now >= w.progress_at + settle and (w.d_since is None or now - w.d_since >= STUCK_D_S)
                    and not loop_pending and not undated):
                break
            if st.alive and detect_stall(cfg.verify.stall_after, scan.clock, now) is not None:
                break
            if st.queued:  # waiting for the scheduler: not the job's startup time
                if now >= started + cfg.slurm.queue_wait:
                    break
            elif w.progress_at is None and now >= dl.at:
                break
            _announce_wait(vb, cfg, st, scan, w, started, dl)
            # before the first progress, a quiet log wakes verify when it changes (:mod:`.progress_wake`)
            await wake.wait(_next_sleep(tick, w, settle, started, time.time()), offset=reader.offset,
                            waiting_for_progress=has_marker and w.progress_at is None, alive=st.alive)
            tick = min(TICK_MAX_S, tick * 1.5)
        await _judge(ctx, vb, job, st, scan, w, wait=wait, started=started, clock=clock, dl=dl)
        if st.alive and not vb.failed and not vb.verdict.pending and (faults := await gpus.result()):
            # a GPU lost (or an Xid) while the job runs on: said, never failed (it may train on other GPUs)
            vb.add(Stage(GPU_NOTE_STAGE, Status.OK, Layer.GPU, gpu_note(faults), advice=faults[0].advice,
                         data={"findings": [f.to_dict() for f in faults]}))
    finally:
        gpus.drop()  # no passing verdict wanted it, or verify was cancelled: not left running
    return vb.finish()


def _next_sleep(tick: float, w: _Watch, settle: float, started: float, now: float) -> float:
    """How long to wait before the next reading: the growing tick, capped at TICK_FAST_MAX_S in the
    first FAST_WINDOW_S after launch, and never past the end of the settle window (the reading that
    ends it comes when it ends, not up to a tick later)."""
    if now - started < FAST_WINDOW_S:
        tick = min(tick, TICK_FAST_MAX_S)
    end = w.progress_at + settle if w.progress_at is not None else None
    if end is not None and now < end:  # past it (a D state, an undated backlog…): the tick as it is
        tick = min(tick, max(0.01, end - now))
    return tick


async def _compiled(ctx: ActionContext, job: JobRecord, detail: str, data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A failure's detail and data, with the job's failed torch.compile (one that raised: not
    suppressed) named: frame, place and torch's reason (docs/compile.md).  The trace is read whole
    once here: the stream may be half a second behind the job's death."""
    fol = follower_for(ctx.transport, job.trace_dir)
    if fol is None or not fol.live.builder.events:  # nothing compiled (yet): no read of the whole trace
        return detail, data
    try:
        live = await fol.read_whole(timeout=10)
    except (RemoteError, asyncio.TimeoutError):
        live = fol.live
    hits = unsuppressed_failures(live.summary())
    if not hits:
        return detail, data
    words = [failure_words(frame, fail) for frame, fail in hits[:3]]
    return f"{detail}; {words[0]}", {**data, "compile_failures": words}


def _announce_wait(vb: VerdictBuilder, cfg: Any, st: JobState, scan: LogScan, w: _Watch, started: float, dl: Deadline) -> None:
    """What verify waits for now, with the time against its deadline (a display draws a bar): a
    model still loading within startup_timeout is seen waiting, not frozen."""
    if st.queued:
        vb.running("spawned", "queued by the scheduler", since=started, deadline_s=cfg.slurm.queue_wait)
    elif not st.spawned:
        vb.running("spawned", "waiting for the job's pid file", since=started, deadline_s=cfg.job.startup_timeout)
    elif w.undated_since is not None and scan.clock.undated:
        vb.running("settled", "cannot tell when the last progress was (no timestamp on its line; the log's mtime moves with any "
                   "line): following the job for one stall_after window", since=w.undated_since,
                   deadline_s=stall_threshold(cfg.verify.stall_after, scan.clock) or 0.0)
    elif w.progress_at is None:
        what = f"/{cfg.job.progress_pattern}/" if scan.progress_re is not None else f"{cfg.job.healthy_after:g}s without a crash"
        vb.running("progress", dl.waiting(f"waiting for {what} ({scan.lines} log lines so far)"), since=dl.since, deadline_s=dl.span_s)
    else:
        vb.running("settled", "no error since the first progress", since=w.progress_at, deadline_s=cfg.verify.settle)


async def _judge(ctx: ActionContext, vb: VerdictBuilder, job: JobRecord, st: JobState, scan: LogScan, w: _Watch, *,
                 wait: bool, started: float, clock: StartupClock, dl: Deadline) -> None:
    cfg = ctx.cfg
    now = time.time()
    startup_deadline = dl.at
    evidence = Evidence(command=f"tail {job.log_path}", exit_code=st.exit_code, output=scan.tail())
    base = {"log_path": job.log_path, "log_lines": scan.lines, "launch_id": job.launch_id}
    if st.exit_foreign:
        base["foreign_exit"] = st.exit_foreign

    async with vb.stage("spawned") as sp:
        if not st.spawned:
            if not wait and now < startup_deadline:
                sp.pending("no pid file yet")
            else:
                raise StageFailed(Layer.PROCESS, f"the job never wrote {job.pid_file}: it never spawned", evidence=evidence)
        else:
            sp.ok(st.identity(job), evidence=None, **base)
    if _stop_here(vb, "spawned"):
        return

    gone = gone_cause(job, st, scan)  # its launcher exited first and what it started is gone (no exit status)
    if gone is None and job.adopted and not st.alive and (told := st.scheduler_cause(job, scan)) is not None and told.state == "finished":
        gone = told  # an adopted job gone after saying training ended: finished by its own word (no status to read)
    has_marker = scan.progress_re is not None
    # progress: a progress line, or (without a pattern) healthy_after seconds alive without a crash
    lost = progress_lost(job, scan)  # an earlier reading saw progress the log holds no more (rotated after the end)
    progressed = scan.progress_line is not None or (not has_marker and w.progress_at is not None) or lost
    finished = (st.exit_code == 0 or (gone is not None and gone.state == "finished")) and progressed and not scan.errors()
    # exit 0 with no error and no progress, after output of its own (its code ran): the process ended
    # cleanly, the training never showed (app, at progress); a silent one never got to run (untested)
    quiet_end = st.exit_code == 0 and gone is None and not progressed and not scan.errors() and (ran := code_ran(scan)) is not None and ran.ran
    async with vb.stage("alive") as al:
        if finished:
            reached = (f"after reaching progress (last: {scan.last_progress[:120]})" if scan.last_progress
                       else f"after reaching progress ({LOST_LOG})" if lost else f"after {cfg.job.healthy_after:g}s without a crash (healthy_after)")
            piped = "" if gone else pipeline_note(job.command or cfg.job.command)
            al.ok(f"finished: {gone.detail if gone else describe_exit(0)} {reached}" + leftovers_note(st) + piped)
        elif quiet_end:
            al.ok(f"{describe_exit(0)} {fmt_secs(now - started)} after launch, before any progress" + leftovers_note(st))
        elif st.queued:
            _queued(al, st)
        elif not st.alive:
            cause = gone if gone is not None else await death_cause(ctx, job, st, scan)
            detail, data = await _compiled(ctx, job, cause.full, cause.data)
            raise StageFailed(cause.layer, detail, evidence=evidence, advice=cause.advice, data=data)
        elif ((ld := find_loop_death(scan)) is not None and unconfirmed_s(ld) == 0 and not w.loop_ended
              and (dead := await loop_death_cause(ctx, job, st, scan, ld)) is not None):
            raise StageFailed(dead.layer, dead.full, evidence=evidence, advice=dead.advice, data=dead.data)
        else:
            in_d = None if w.d_since is None else now - w.d_since
            lead = st.leader
            if in_d is not None and in_d >= STUCK_D_S and lead is not None and lead.state[:1] in ("T", "t"):
                raise StageFailed(Layer.PROCESS, f"{lead.comm} pid {lead.pid} is {stopped_words(lead.state)}; no progress for {fmt_secs(in_d)}",
                                  evidence=evidence, advice="kill -CONT the process, or detach the debugger that stopped it")
            if in_d is not None and in_d >= STUCK_D_S and lead is not None:
                raise StageFailed(Layer.PROCESS, f"{lead.comm} pid {lead.pid} is stuck in D (uninterruptible) for {fmt_secs(in_d)}",
                                  evidence=evidence, advice="stuck in the kernel: I/O on a dead file system or the GPU driver; see the process pane")
            al.ok(f"running: {st.describe()}" + (f"; ignored a foreign exit status ({st.exit_foreign})" if st.exit_foreign else "")
                  + "".join(f"; {n}" for n in w.notes))
            if w.notes:
                al.data["survived"] = list(w.notes)
    if _stop_here(vb, "alive"):
        return

    async with vb.stage("log created") as lc:
        if st.log_size >= 0:
            lc.ok(f"{job.log_path} exists")
        elif quiet_end:
            raise StageFailed(Layer.APP, f"the job exited with code 0 without creating {job.log_path}", evidence=evidence,
                              advice="does the job write where [job] log says?")
        elif now < startup_deadline:
            lc.pending(f"{job.log_path} not created yet ({now - dl.since:.0f}s of {dl.span_s:g}s)", since=dl.since, deadline_s=dl.span_s)
        else:
            raise StageFailed(Layer.PROCESS, f"{job.log_path} was never created within {dl.within(cfg.job.startup_timeout)}",
                              evidence=evidence, advice="does the job write where [job] log says? is it stuck before logging?")
    if _stop_here(vb, "log created"):
        return

    err = left_out_cause(cfg, error_cause(scan))  # a module the deploy left out is the config's
    async with vb.stage("log growing") as lg:
        if st.log_size > 0 or lost and st.log_size == 0:
            lg.ok(f"{st.log_size} bytes, {scan.lines} lines" + (f"; {LOST_LOG}" if lost else ""))
        elif quiet_end:
            raise StageFailed(Layer.APP, "the job exited with code 0 and wrote nothing to its log", evidence=evidence)
        elif now < startup_deadline and err is None:
            lg.pending(f"log is empty ({now - dl.since:.0f}s of {dl.span_s:g}s)", since=dl.since, deadline_s=dl.span_s)
        elif err is None:
            note = await elsewhere(ctx, st, job.log_path)
            raise StageFailed(Layer.PROCESS, f"the log stayed empty for {dl.within(cfg.job.startup_timeout)}{note}", evidence=evidence)
    if _stop_here(vb, "log growing"):
        return

    said = f" ({dl.note})" if dl.note and wait else ""  # where startup_timeout counted from ([verify] startup_timeout_from)
    async with vb.stage("progress") as pr:
        if err is not None and w.progress_at is None and scan.progress_line is None:
            detail, data = await _compiled(ctx, job, f"{err.detail}, before any progress", err.data)
            raise StageFailed(err.layer, detail, evidence=evidence, advice=err.advice, data=data)
        if scan.progress_line is not None:
            pr.ok(f"progress marker seen: {scan.progress_line[:200]}{said}")
        elif not has_marker and w.progress_at is not None:
            pr.ok(f"no crash for {cfg.job.healthy_after:g}s (healthy_after){said}")
        elif lost:
            pr.ok(LOST_LOG)
        elif quiet_end:
            what = f"no line matched /{cfg.job.progress_pattern}/" if has_marker else f"it ran less than healthy_after ({cfg.job.healthy_after:g}s)"
            words = last_words(scan)
            raise StageFailed(Layer.APP, f"the job exited with code 0 before any progress: {what}" + (f"; its last line: {words}" if words else ""),
                              evidence=evidence, advice="it ended on purpose (nothing to do?) or its progress lines do not match [job] progress_pattern")
        elif now < startup_deadline:
            what = "waiting for " + (f"/{cfg.job.progress_pattern}/" if has_marker else f"{cfg.job.healthy_after:g}s without a crash")
            pr.pending(dl.waiting(what), since=dl.since, deadline_s=dl.span_s)
        else:
            failed = no_progress(dl, clock.busy_now(), cfg.job.startup_timeout, evidence, scan, cfg.job.progress_pattern)
            failed.detail += await elsewhere(ctx, st, job.log_path)
            raise failed
    if _stop_here(vb, "progress"):
        return

    async with vb.stage("settled") as se:
        lead = st.leader
        stall = detect_stall(cfg.verify.stall_after, scan.clock, now, lead.state if lead else "") if st.alive else None
        cpu, away = await sampled_main(ctx, ctx.job_reader, lead, stall)
        stall = await judged_stall(ctx, stall, scan.clock, now, lead.state if lead else "", cpu=cpu, away=away,  # its layer, from the GPUs
                                   ended=lambda: said_ended(scan))
        if err is None and stall is not None:
            raise StageFailed(stall.layer, f"stalled: {stall.describe()}", evidence=evidence,
                              advice="a hang, not a crash: dump the threads' stacks (cockpit stacks, or the stacks key) to see where it waits")
        if err is not None:
            raise StageFailed(err.layer, f"{err.detail}, after progress ({scan.progress_count} progress lines)",
                              evidence=evidence, advice=err.advice, data=err.data)
        div = scan.nonfinite.first if scan.nonfinite is not None else None
        if div is not None and cfg.verify.nonfinite == "fail":
            raise StageFailed(Layer.APP, f"diverged: {div.describe()}", evidence=evidence, advice=DIVERGED_ADVICE,
                              data={"nonfinite": div.to_dict()})
        note = ""
        if div is not None:  # [verify] nonfinite = "warn": said, not failed
            se.data["nonfinite"] = div.to_dict()
            note += f"; warning: {div.describe()}"
        if w.undated_since is not None:
            se.data["followed_s"] = round(now - w.undated_since, 1)
            note += f"; followed {fmt_secs(now - w.undated_since)} (the log's progress lines carry no time)"
        n = scan.progress_count
        if finished:
            words = said_failed(scan)  # it caught its error, said so and exited 0: not clean, by its own word
            se.ok(f"finished{'' if words else ' cleanly'}: {f'{n} progress lines, ' if has_marker and not lost else ''}no error in the log"
                  + (f"; {LOST_LOG}" if lost else "") + (f", but its last line: {words}" if words else "") + note)
        elif not wait:
            se.ok(f"alive {fmt_secs(now - started)} after launch, {n} progress lines, no error in the log"
                  + (f"; last: {scan.last_progress[:120]}" if scan.last_progress else "") + note)
        elif w.progress_at is not None and now >= w.progress_at + cfg.verify.settle - 0.05:
            se.ok(f"alive, {n} progress lines and no error for {cfg.verify.settle:g}s after the first progress (settle){note}")
        else:
            se.pending(f"settling: {cfg.verify.settle:g}s after the first progress")


def _diverged(cfg: Any, scan: LogScan) -> str | None:
    """The divergence that fails the attempt (``[verify] nonfinite = "fail"``), or None."""
    div = scan.nonfinite.first if scan.nonfinite is not None else None
    return div.describe() if div is not None and cfg.verify.nonfinite == "fail" else None


def _queued(al: Any, st: JobState) -> None:
    """Queued by a scheduler: pending (never failed) while it waits its turn; a request that cannot
    start as things are (its nodes drained or down, an impossible request) fails at its layer."""
    blocked = st.scheduler_evidence().get("blocked")
    if blocked:
        raise StageFailed(Layer(blocked[0]), f"queued and cannot start: {st.describe()}", advice=blocked[1], data=st.scheduler_evidence())
    al.pending(f"queued: {st.describe()}")


def _stop_here(vb: VerdictBuilder, name: str) -> bool:
    """After stage ``name``: stop judging when it failed, or when it is pending (the stages after a
    pending one are pending too)."""
    if vb.failed:
        return True
    if vb.verdict.stages[-1].status is Status.PENDING:
        _rest(vb, name)
        return True
    return False


def _rest(vb: VerdictBuilder, after: str) -> None:
    """The stages after a pending one are pending too (waiting, not failed)."""
    names = [n for n, _ in VERIFY_PLAN]
    for n in names[names.index(after) + 1:]:
        vb.add(Stage(n, Status.PENDING, dict(VERIFY_PLAN)[n], "waiting"))

"""``Engine.adopt(pid)``: a job cockpit did not start, made the target's job (an attempt of its own).

connect → identify (one reading of ``/proc/PID``, :mod:`.actions.adopt`) → verify, as for a
launched job (alive, log, progress, errors, settled).  The journal gets an attempt with the note
``adopted``, an ``adopt`` event (trigger ``adopt``: the pid, argv, start time, cwd, where its output
goes) and the job record (``adopted: true``), so every later cockpit (``stop``, ``status``, the
TUI) finds it as it finds a launched job.  A job whose output goes to a pipe or a terminal is
adopted without a log: the verdict fails in the ``process`` layer saying its output cannot be read
until the next launch, which writes to ``[job] log``.  The next attempt stops it (by pid and start
time) and launches ``[job] command`` as usual.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from .actions.adopt import AdoptedReader, Adoptee, adopted_record, read_process
from .actions.base import ActionContext, StageFailed, VerdictBuilder
from .actions.jobstate import make_scan
from .actions.verify import verify
from .attempt import AttemptHost, AttemptResult, Tee
from .connectivity import check_connectivity
from .layers import Layer, Outcome, Stage, Status, Verdict, outcome_of
from .outcome import code_ran
from .stagelog import StageRecorder

__all__ = ["run_adoption", "ADOPT_EVENT", "ADOPT_NOTE", "ADOPT_TRIGGER"]

ADOPT_EVENT = "adopt"
ADOPT_NOTE = "adopted"
ADOPT_TRIGGER = "adopt"
ADOPT_PLAN = [("identify", Layer.PROCESS), ("output", Layer.PROCESS)]


def _no_log(p: Adoptee, cfg_log: str) -> StageFailed:
    where = {"pipe": "a pipe", "tty": "a terminal", "socket": "a socket", "null": "/dev/null", "deleted": "a deleted file"}.get(p.output, "nowhere cockpit can read")
    return StageFailed(Layer.PROCESS, f"adopted pid {p.pid} without a log: its output goes to {where} ({p.fd1 or '?'}); "
                       "cockpit cannot read it until the next launch", advice=f"relaunch it: the next attempt writes to [job] log ({cfg_log})",
                       data={"output": p.output, "stdout": p.fd1, "stderr": p.fd2})


async def run_adoption(engine: AttemptHost, pid: int, make_ctx: Callable[[Callable[[str, Stage], None]], ActionContext], *,
                       wait: bool = True) -> AttemptResult:
    """Adopt ``pid`` as an attempt (see the module doc); the engine holds the target meanwhile.
    ``wait``: verify waits for progress and the settle window, as after a launch; else it judges the
    job as it is now (``cockpit verify``)."""
    cfg, journal = engine.cfg, engine.journal
    verdict = Verdict("adopt")
    record = StageRecorder(journal)
    ctx = make_ctx(record)
    await check_connectivity(engine.transport, cfg, Tee(verdict, "connect"), on_stage=ctx.on_stage)
    if verdict.failed_stage is not None:
        verdict.finish()
        return AttemptResult(0, outcome_of(verdict), verdict)
    sub = Tee(verdict, "adopt")
    vb = VerdictBuilder(ctx, "adopt", ADOPT_PLAN, sub)
    found: Adoptee | None = None
    async with vb.stage("identify") as st:
        found = await read_process(ctx, pid)
        st.ok(f"pid {pid} ({found.stat.comm} {found.stat.state}): {' '.join(found.argv)[:200]} in {found.cwd or '?'}; "
              + (f"log {found.log_path}" if found.log_path else f"output to {found.fd1 or '?'}"), **found.to_dict())
    if found is None or vb.failed:
        vb.finish()
        verdict.finish()
        return AttemptResult(0, Outcome.UNTESTED, verdict)
    aid = journal.start_attempt(ADOPT_NOTE, cfg.display_name, log_path=found.log_path or None)
    job = adopted_record(found, aid)
    job.target = cfg.display_name
    journal.record_job(aid, job.to_dict())  # first: whatever happens next, the next cockpit can find and stop it
    journal.record(aid, ADOPT_EVENT, trigger=ADOPT_TRIGGER, **found.to_dict())
    record.start(aid)
    ctx.job = job
    finished = False
    try:
        reader = AdoptedReader(ctx, job, make_scan(cfg))
        if not found.log_path:
            await _without_log(ctx, vb, reader, found, cfg.log_path(aid))
            vb.finish()
            ctx.job_reader = reader
        else:
            vb.add(Stage("output", Status.OK, Layer.PROCESS, f"log {found.log_path} (fd 1 → {found.fd1 or '?'})"))
            vb.finish()
            sub = Tee(verdict, "verify")
            await verify(ctx, job, sub, wait=wait, reader=reader)
            journal.record_verdict(aid, "verify", sub.finish())
        journal.record_verdict(aid, "adopt", vb.verdict.finish())
        verdict.finish()
        scan = ctx.log_scan
        outcome = outcome_of(verdict, job_started=True, ran=code_ran(scan))
        first_error = scan.error() if scan is not None else None
        journal.finish_attempt(aid, outcome, layer=verdict.layer, summary=verdict.summary(), first_error=first_error)
        finished = True
        return AttemptResult(aid, outcome, verdict, first_error, job, reader=ctx.job_reader or reader)
    finally:
        if not finished:
            with contextlib.suppress(OSError):
                journal.finish_attempt(aid, Outcome.INTERRUPTED, layer=verdict.layer, summary="cockpit stopped before a verdict")


async def _without_log(ctx: ActionContext, vb: VerdictBuilder, reader: AdoptedReader, p: Adoptee, cfg_log: str) -> None:
    """A job whose output cockpit cannot read: alive, once, then the ``output`` stage fails."""
    async with vb.stage("alive", Layer.PROCESS) as st:
        state = await reader.read()
        if not state.alive:
            raise StageFailed(Layer.PROCESS, f"adopted pid {p.pid} exited while it was being adopted")
        st.ok(f"running: {state.describe()}")
    if vb.failed:
        return
    async with vb.stage("output"):
        raise _no_log(p, cfg_log)

"""``launch`` and ``relaunch`` on their own (no deploy, no clear-cache): journalled as attempts.

A job cockpit starts is a job the next cockpit must find and stop.  Before, a bare launch or
relaunch only told the engine of *this* process: ``cockpit relaunch`` followed by ``cockpit stop``
(two processes) called the relaunched job "a copy of the job that cockpit did not start" and left
it running, and the next attempt launched beside it.  Now each is an attempt of its own, noted
``relaunch`` or ``launch``: the stop's stages, the job record (written the moment the spawn
answers, before verify), the verdict, the outcome and later the fate and the torch.compile summary
go in the journal as for any attempt, so ``history``, ``compare``, ``stop``, ``status`` and the TUI
see it.  The verdict returned keeps the action's own stage names (``identify job``, ``spawn``,
``progress``…), without the attempt's ``stop: …`` prefixes: it is still that action's verdict.

``launch`` does not verify: its attempt ends with the outcome ``running`` ("no verdict yet"), and
its job's fate is followed and journalled as any other.  A connection that fails before anything
runs journals nothing (nothing changed in the target);
a stop that fails journals nothing either (the recorded job is still the one that runs).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

from .actions.base import ActionContext
from .actions.job import JobRecord, launch
from .actions.verify import verify
from .attempt import AttemptHost, AttemptResult
from .compile_cache import compile_cache_stage
from .layers import Outcome, Stage, Verdict
from .outcome import judge_attempt
from .stagelog import StageRecorder

__all__ = ["run_launch", "LAUNCH_NOTES"]

#: the note of the attempt each action journals
LAUNCH_NOTES = {"launch": "launch", "relaunch": "relaunch"}


async def run_launch(engine: AttemptHost, name: str, v: Verdict, make_ctx: Callable[[Callable[[str, Stage], None]], ActionContext],
                     stop_step: Callable[[ActionContext, Verdict], Awaitable[None]]) -> AttemptResult | None:
    """``relaunch`` (stop, then launch) or ``launch``, verified, as an attempt; connectivity has
    passed.  None when nothing was launched (the stop failed)."""
    cfg, journal = engine.cfg, engine.journal
    record = StageRecorder(journal)
    ctx = make_ctx(record)
    if name == "relaunch":
        await stop_step(ctx, v)
        if v.failed_stage is not None:
            return None
    aid = journal.start_attempt(LAUNCH_NOTES[name], cfg.display_name, log_path=cfg.log_path(journal.next_id()))
    record.start(aid)
    finished = False
    try:
        _, job = await launch(ctx, aid, v)
        if job is not None and v.failed_stage is None and name == "relaunch":
            await verify(ctx, job, v)
            if v.failed_stage is None and not v.pending and job.trace_dir:  # no clear: the cache's hits as information
                found = await compile_cache_stage(ctx, job, cleared=False)
                if found is not None:
                    v.add(found)
                    if ctx.on_stage is not None:
                        ctx.on_stage("compile", found)
        v.finish()
        journal.record_verdict(aid, name, v)
        result = _result(aid, v, ctx, job)
        summary = v.summary()
        if name == "launch" and result.outcome is Outcome.PASSED:  # started, never judged: no verdict yet
            result.outcome, summary = Outcome.RUNNING, "launch: started, not verified (cockpit verify judges it)"
        journal.finish_attempt(aid, result.outcome, layer=v.layer, summary=summary, first_error=result.first_error)
        finished = True
        return result
    finally:
        if not finished:
            with contextlib.suppress(OSError):  # the journal's own disk is gone: nothing more to record
                journal.finish_attempt(aid, Outcome.INTERRUPTED, layer=v.layer, summary="cockpit stopped before a verdict")


def _result(aid: int, v: Verdict, ctx: ActionContext, job: JobRecord | None) -> AttemptResult:
    outcome, first_error = judge_attempt(v, ctx.log_scan, job_started=job is not None and job.started)
    return AttemptResult(aid, outcome, v, first_error, job, reader=ctx.job_reader)

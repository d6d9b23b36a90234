"""One attempt: note → connect → deploy → stop (+ strays) → clear caches → launch → verify → compile cache.

:func:`run_attempt` is the sequence itself, journalled as it goes; the :class:`~.engine.Engine`
wraps it with the target lock, the events and the fate follower.  Every attempt, whether a key,
the attempt-on-save loop or ``cockpit attempt`` started it, goes through here.  After a passed
verify of a job that writes a torch.compile trace, the ``compile cache`` stage
(:mod:`.compile_cache`) proves the clear: every graph a cache miss after clear-cache.

Stop comes before clear-cache: an old job that goes on compiling refills a cache cleared under it,
and the new job would then hit entries the old one wrote (the compile cache stage would call the
clear a lie).  What the old job's environment says of its caches is still read while it runs:
clear-cache's inventory rides in deploy's round trip; its removal, after stop, does not trust
that earlier reading of what is absent (:func:`~.actions.cache.clear_cache`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from .actions.base import ActionContext
from .actions.cache import caches_command, clear_cache
from .actions.deploy import code_version, deploy, start_ahead
from .actions.job import JobRecord, launch
from .actions.strays import strays_command
from .actions.verify import verify
from .attempt_result import AttemptResult
from .changes import record_attempt_changes
from .compile_cache import compile_cache_stage
from .connectivity import check_connectivity
from .layers import Layer, Outcome, Stage, Status, Verdict
from .outcome import findings_text, judge_attempt, log_findings
from .stagelog import StageRecorder

if TYPE_CHECKING:  # pragma: no cover
    from .config import Config
    from .journal import Journal
    from .remote.base import Transport
    from .remote.hostsession import HostSession

__all__ = ["AttemptResult", "run_attempt", "Tee", "INVENTORY_MAX_AGE_S", "AttemptHost"]


class _Observing(Protocol):
    @property
    def host(self) -> HostSession: ...


class _Compiles(Protocol):
    def job_ended(self, attempt: int) -> None: ...


class AttemptHost(Protocol):
    """What an attempt, a launch and an adoption need of the engine that runs them
    (:class:`~.engine.Engine` is the one): typed by this face, they do not name the engine,
    which imports them."""

    held_trace_reads: list[int] | None

    @property
    def cfg(self) -> Config: ...
    @property
    def journal(self) -> Journal: ...
    @property
    def transport(self) -> Transport: ...
    @property
    def observer(self) -> _Observing: ...
    @property
    def compile(self) -> _Compiles: ...
    def set_job(self, job: JobRecord | None, attempt: int | None = None) -> None: ...

#: how old clear-cache's inventory (read during deploy) may be once stop is done: stop's own
#: waits (TERM's grace, the zombies' reaping) are seconds, and the reading is of what the old job used
INVENTORY_MAX_AGE_S = 120.0


class Tee(Verdict):
    """A sub-verdict whose stages are also copied, prefixed with the action, into the attempt's."""

    def __init__(self, parent: Verdict, prefix: str) -> None:
        super().__init__(prefix)
        self._parent, self._prefix = parent, prefix

    def add(self, stage: Stage) -> Stage:
        super().add(stage)
        self._parent.add(Stage(f"{self._prefix}: {stage.name}", stage.status, stage.layer, stage.detail, stage.evidence,
                               stage.started_at, stage.duration_s, stage.advice, stage.data))
        return stage


async def run_attempt(engine: AttemptHost, note: str, make_ctx: Callable[[Callable[[str, Stage], None]], ActionContext],
                      stop_step: Callable[[ActionContext, Verdict], Awaitable[Any]]) -> AttemptResult:
    """The attempt sequence (see the module doc); ``stop_step`` is the engine's stop + strays."""
    cfg, journal = engine.cfg, engine.journal
    t_start = time.monotonic()
    version = code_version(cfg.deploy_source) if cfg.deploy_source and cfg.deploy_source.exists() else None
    verdict = Verdict("attempt")
    timings: dict[str, float] = {}
    job: JobRecord | None = None

    record = StageRecorder(journal)  # the job record first, when the spawn answers: a cockpit that dies then is still found
    ctx = make_ctx(record)
    t = time.monotonic()
    # connect's questions (reads only) go out first; the attempt is opened in the journal (its fsync)
    # while they travel, and connect's stages that answer before that wait in the recorder
    connect = asyncio.ensure_future(check_connectivity(engine.transport, cfg, Tee(verdict, "connect"), on_stage=ctx.on_stage,
                                                           host=engine.observer.host))
    try:
        await asyncio.sleep(0)  # connect asks the target shell first: the early batch queues behind it
        attempt_id = journal.next_id()
        attempt_id = journal.start_attempt(note, cfg.display_name, code_version=version, log_path=cfg.log_path(attempt_id))
    except BaseException:
        connect.cancel()
        raise
    record.start(attempt_id)
    finished = False
    changes: asyncio.Future[dict[str, Any]] | None = None
    try:
        if (inventory := caches_command(ctx)) is not None:
            # a read: clear-cache's inventory rides in deploy's round trip (its answer, its stage), taken
            # while the old job still runs (its environment names its caches) and used after stop
            ctx.ride(inventory, max_age_s=INVENTORY_MAX_AGE_S)
        # the source read and a small upload started while connect waits for the host (judged only after it)
        ahead = start_ahead(ctx, version)
        try:
            await connect
        except BaseException:
            if ahead is not None:
                ahead.drop()
            raise
        if verdict.failed_stage is not None and ahead is not None:
            ahead.drop()  # nothing of it is judged: deploy is not reached
        timings["connect"] = time.monotonic() - t
        steps: list[tuple[str, Callable[[Verdict], Awaitable[Any]]]] = [
            ("deploy", lambda v: deploy(ctx, v, ahead=ahead)),
            ("stop", lambda v: stop_step(ctx, v)),
            ("clear-cache", lambda v: clear_cache(ctx, v)),
            ("launch", lambda v: launch(ctx, attempt_id, v)),
        ]
        for name, fn in steps:
            if verdict.failed_stage is not None:
                break
            t = time.monotonic()
            sub = Tee(verdict, name)
            rt = engine.transport.runtime
            if name == "stop" and rt.looks_for_strays and rt.scheduler is None and cfg.job.command.strip():
                ctx.ride(strays_command(cfg.job.command))  # a read: the strays scan rides in stop's last look at the table
            if name == "stop":
                engine.held_trace_reads = []  # the stopped job's last trace read waits for the spawn
            res = await fn(sub)
            ctx.riders.clear()  # a rider no batch took is run by its own stage
            timings[name] = time.monotonic() - t
            journal.record_verdict(attempt_id, name, sub.finish(), durable=False)  # the job record or the end syncs it
            source = cfg.deploy_source  # set whenever deploy left a manifest
            if name == "deploy" and sub.failed_stage is None and ctx.manifest and source is not None:
                # what changed since the previous attempt's deploy: kept beside the journal (a thread of
                # its own while stop and clear-cache wait for the target; done before the launch)
                changes = asyncio.ensure_future(asyncio.to_thread(
                    record_attempt_changes, journal, attempt_id, source, cfg.deploy.exclude,
                    max_bytes=cfg.loop.diff_max_bytes, deployed=ctx.manifest))
            if name == "clear-cache" and changes is not None:
                ctx.changes, changes = await changes, None
            if name == "launch":
                job = res[1]
                if job is not None:
                    engine.set_job(job, attempt_id)
                _release_trace_reads(engine)
        if changes is not None:  # an attempt that ended before its launch
            ctx.changes = await changes
        if verdict.failed_stage is None and job is not None:
            t = time.monotonic()
            sub = Tee(verdict, "verify")
            await verify(ctx, job, sub)
            timings["verify"] = time.monotonic() - t
            scan = ctx.log_scan
            findings = log_findings(scan) if scan is not None else []
            if findings and sub.failed_stage is None and not sub.pending:
                # what the log noticed without failing the run (a handled error's traceback, an eager
                # fallback): said in the verdict, never as a failure
                sub.add(Stage("findings", Status.OK, Layer.APP, findings_text(findings),
                              data={"findings": [f.to_dict() for f in findings]}))
            journal.record_verdict(attempt_id, "verify", sub.finish(), durable=False)
            if job.main_pid is not None:  # what verify saw of the job's main process: a later cockpit reads it
                journal.record_job(attempt_id, job.main_fields(), durable=False)  # the attempt's end syncs it
            if verdict.failed_stage is None and not sub.pending and job.trace_dir:
                t = time.monotonic()
                found = await compile_cache_stage(ctx, job, cleared=ctx.caches is not None)
                if found is not None:
                    cc = Verdict("compile")
                    stage = cc.add(found)
                    verdict.add(stage)
                    if ctx.on_stage is not None:  # the journal and the UI see it as any other stage
                        ctx.on_stage("compile", stage)
                    journal.record_verdict(attempt_id, "compile", cc.finish(), durable=False)
                timings["compile cache"] = time.monotonic() - t
        verdict.finish()
        scan = ctx.log_scan
        findings = log_findings(scan) if scan is not None else []
        # failed or untested: did the job's code run (progress, its own output)?  A lost
        # connection is interrupted: the job runs on, unjudged
        outcome, first_error = judge_attempt(verdict, scan, job_started=job is not None and job.started)
        timings["total"] = time.monotonic() - t_start
        journal.finish_attempt(attempt_id, outcome, layer=verdict.layer, summary=verdict.summary(),
                               first_error=first_error, caches=ctx.caches)
        finished = True
        return AttemptResult(attempt_id, outcome, verdict, first_error, job, timings, ctx.changes,
                             reader=ctx.job_reader, findings=findings)
    finally:
        _release_trace_reads(engine)
        if changes is not None:  # never left unretrieved: the attempt's own failure is the one said
            changes.add_done_callback(lambda f: f.cancelled() or f.exception())
        if not finished:
            with contextlib.suppress(OSError):  # the journal's own disk is gone: nothing more to record
                journal.finish_attempt(attempt_id, Outcome.INTERRUPTED, layer=verdict.layer, summary="cockpit stopped before a verdict")


def _release_trace_reads(engine: AttemptHost) -> None:
    """The trace reads held while the old job stopped and the new one launched start now."""
    held, engine.held_trace_reads = engine.held_trace_reads, None
    for attempt in held or []:
        engine.compile.job_ended(attempt)

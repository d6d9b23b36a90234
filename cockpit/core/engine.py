"""One target's state and the only thing the UI and the headless CLI talk to.

The engine owns the transport, the journal and the job record, runs actions one at a time, and
turns every action into a :class:`~cockpit.core.layers.Verdict`.  Listeners (the TUI) get each
stage as it is decided through ``on_stage``; the journal gets every stage, verdict and job record
as it happens, flushed and fsynced, so a crash of cockpit itself loses nothing.

One action at a time per target: inside one process an ``asyncio.Lock``; across processes (a TUI
and a ``cockpit attempt`` in another terminal) an ``flock`` on ``<journal dir>/<target>.lock``.
A second request is refused with a message naming who holds the target, never interleaved.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Callable

from ..config import Config
from .actions.base import ActionContext
from .actions.cache import clear_cache
from .actions.deploy import code_version, deploy
from .actions.job import JobRecord, launch, stop
from .actions.reboot import reboot
from .actions.verify import verify
from .changes import record_attempt_changes
from .connectivity import check_connectivity
from .journal import Journal
from .layers import Layer, Outcome, Stage, Status, Verdict, outcome_of
from .observe import Observer
from .remote import make_transport
from .remote.base import Transport

__all__ = ["Engine", "Busy", "AttemptResult", "ACTIONS"]

#: the headless action names (``cockpit NAME``) and what they do
ACTIONS = {
    "deploy": "copy [deploy] source into the target and verify checksums",
    "clear-cache": "remove [cache] paths and verify they are gone",
    "stop": "stop the job cockpit launched (TERM, KILL) and check nothing is left",
    "launch": "start [job] command with a new log file",
    "verify": "check the running job: spawned, alive, log, progress",
    "relaunch": "stop + launch + verify",
    "reboot": "pct reboot the container and verify a clean process table",
    "attempt": "deploy, clear caches, stop, launch, verify: one try of a fix",
}

StageListener = Callable[[str, Stage], None]


class Busy(Exception):
    """The target is already running an action (here or in another cockpit)."""


@dataclass
class AttemptResult:
    attempt: int
    outcome: Outcome
    verdict: Verdict
    first_error: dict[str, Any] | None = None
    job: JobRecord | None = None
    timings: dict[str, float] = field(default_factory=dict)
    #: what this attempt deployed that the previous one did not (files, +/- lines, diff path)
    changes: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "outcome": self.outcome.value,
            "layer": self.verdict.layer.value if self.verdict.layer else None,
            "summary": self.verdict.summary(),
            "first_error": self.first_error,
            "job": self.job.to_dict() if self.job else None,
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
            "changes": self.changes,
            "verdict": self.verdict.to_dict(),
        }


class _TargetLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh: Any = None

    def acquire(self, what: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another cockpit"
            fh.close()
            raise Busy(f"the target is busy: {holder}") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} is running {what} since {time.strftime('%H:%M:%S')}")
        fh.flush()
        self.fh = fh

    def release(self) -> None:
        if self.fh is not None:
            with contextlib.suppress(OSError):
                self.fh.truncate(0)
                fcntl.flock(self.fh, fcntl.LOCK_UN)
                self.fh.close()
            self.fh = None


class Engine:
    def __init__(self, cfg: Config, transport: Transport | None = None, journal: Journal | None = None, *, recover: bool = True) -> None:
        self.cfg = cfg
        self.transport = transport or make_transport(cfg)
        self.journal = journal or Journal(cfg.journal_path)
        self.observer = Observer(cfg, self.transport)
        self._recover = recover
        self.listeners: list[StageListener] = []
        self.current_action: str | None = None
        self.job: JobRecord | None = None
        self._lock = asyncio.Lock()
        self._target_lock = _TargetLock(cfg.journal_path.parent / f"{_safe(cfg.display_name)}.lock")
        self.recovered: list[Any] = []
        self._load_job()

    # -- state -----------------------------------------------------------------------------
    def _load_job(self) -> None:
        """Recover interrupted attempts and find the last job cockpit launched (to stop or re-attach)."""
        try:
            self.recovered = self.journal.recover() if self._recover else []
        except OSError:
            self.recovered = []
        for rec in reversed(self.journal.attempts()):
            if rec.job and rec.job.get("pid"):
                self.set_job(JobRecord.from_dict(rec.job))
                break

    def set_job(self, job: JobRecord | None) -> None:
        """The job cockpit launched last: what stop acts on and what the observer follows."""
        self.job = job
        if job is not None:
            self.observer.set_job(job.pid, job.pgid, job.log_path)

    def add_listener(self, fn: StageListener) -> None:
        self.listeners.append(fn)

    def remove_listener(self, fn: StageListener) -> None:
        if fn in self.listeners:
            self.listeners.remove(fn)

    def _emit(self, action: str, stage: Stage) -> None:
        for fn in list(self.listeners):
            fn(action, stage)

    def context(self, extra: StageListener | None = None) -> ActionContext:
        def on_stage(action: str, stage: Stage) -> None:
            if extra is not None:
                extra(action, stage)
            self._emit(action, stage)

        return ActionContext(self.cfg, self.transport, on_stage=on_stage)

    @contextlib.asynccontextmanager
    async def exclusive(self, what: str, *, wait: bool = False) -> AsyncIterator[None]:
        if self._lock.locked() and not wait:
            raise Busy(f"the target is busy: {self.current_action} is running")
        async with self._lock:
            self._target_lock.acquire(what)
            self.current_action = what
            try:
                yield
            finally:
                self.current_action = None
                self._target_lock.release()

    async def close(self) -> None:
        await self.transport.close()

    # -- single actions --------------------------------------------------------------------
    async def run_action(self, name: str, *, wait: bool = False) -> Verdict:
        """Run one headless action by name; its verdict starts with the connectivity stages."""
        if name == "attempt":
            raise ValueError("use Engine.attempt(note)")
        async with self.exclusive(name, wait=wait):
            ctx = self.context()
            v = Verdict(name)
            await check_connectivity(self.transport, self.cfg, v, on_stage=ctx.on_stage)
            if v.failed_stage is not None:
                return v.finish()
            if name == "deploy":
                await deploy(ctx, v)
            elif name == "clear-cache":
                await clear_cache(ctx, v)
            elif name == "stop":
                await stop(ctx, self.job, v)
            elif name == "launch":
                await self._launch(ctx, v, self.journal.next_id())
            elif name == "verify":
                if self.job is None:
                    v.add(Stage("job recorded", Status.FAIL, Layer.PROCESS, "no job launched by cockpit to verify", advice="launch or attempt first"))
                else:
                    await verify(ctx, self.job, v, wait=False)
            elif name == "relaunch":
                await stop(ctx, self.job, v)
                if v.failed_stage is None:
                    job = await self._launch(ctx, v, self.journal.next_id())
                    if job is not None and v.failed_stage is None:
                        await verify(ctx, job, v)
            elif name == "reboot":
                await reboot(ctx, v)
                if v.failed_stage is None:
                    self.job = None
            else:
                raise ValueError(f"unknown action {name!r}")
            return v.finish()

    async def _launch(self, ctx: ActionContext, v: Verdict, attempt: int) -> JobRecord | None:
        _, job = await launch(ctx, attempt, v)
        if job is not None:
            self.set_job(job)
        return job

    # -- the attempt -------------------------------------------------------------------------
    async def attempt(self, note: str, *, wait: bool = False) -> AttemptResult:
        """note → deploy → clear caches → stop → launch → verify, stopping at the first failure."""
        async with self.exclusive("attempt", wait=wait):
            return await self._attempt(note)

    async def _attempt(self, note: str) -> AttemptResult:
        cfg = self.cfg
        t_start = time.monotonic()
        version = code_version(cfg.deploy_source) if cfg.deploy_source and cfg.deploy_source.exists() else None
        attempt_id = self.journal.next_id()
        attempt_id = self.journal.start_attempt(note, cfg.display_name, code_version=version, log_path=cfg.log_path(attempt_id))
        verdict = Verdict("attempt")
        timings: dict[str, float] = {}
        job: JobRecord | None = None

        def record(action: str, stage: Stage) -> None:
            if stage.status is Status.RUNNING:
                return
            if action == "launch" and stage.name == "spawn" and "job" in stage.data:
                # the job record goes first: if cockpit dies right now, the next start can still stop it
                self.journal.record_job(attempt_id, stage.data["job"])
            self.journal.record_stage(attempt_id, action, stage)

        ctx = self.context(record)
        finished = False
        try:
            t = time.monotonic()
            await check_connectivity(self.transport, cfg, _Tee(verdict, "connect"), on_stage=ctx.on_stage)
            timings["connect"] = time.monotonic() - t
            steps: list[tuple[str, Any]] = [
                ("deploy", lambda v: deploy(ctx, v)),
                ("clear-cache", lambda v: clear_cache(ctx, v)),
                ("stop", lambda v: stop(ctx, self.job, v)),
                ("launch", lambda v: launch(ctx, attempt_id, v)),
            ]
            for name, fn in steps:
                if verdict.failed_stage is not None:
                    break
                t = time.monotonic()
                sub = _Tee(verdict, name)
                res = await fn(sub)
                timings[name] = time.monotonic() - t
                self.journal.record_verdict(attempt_id, name, sub.finish())
                if name == "deploy" and sub.failed_stage is None and ctx.state.get("manifest"):
                    # what changed since the previous attempt's deploy: kept beside the journal
                    ctx.state["changes"] = await asyncio.to_thread(
                        record_attempt_changes, self.journal, attempt_id, cfg.deploy_source, cfg.deploy.exclude,
                        max_bytes=cfg.loop.diff_max_bytes, deployed=ctx.state["manifest"])
                if name == "launch":
                    job = res[1]
                    if job is not None:
                        self.set_job(job)
            first_error = None
            if verdict.failed_stage is None and job is not None:
                t = time.monotonic()
                sub = _Tee(verdict, "verify")
                await verify(ctx, job, sub)
                timings["verify"] = time.monotonic() - t
                self.journal.record_verdict(attempt_id, "verify", sub.finish())
                scan = ctx.state.get("log_scan")
                first_error = scan.error() if scan is not None else None
            verdict.finish()
            outcome = outcome_of(verdict, job_started=job is not None and job.pid is not None)
            fs = verdict.failed_stage
            if first_error is None and fs is not None and fs.data.get("first_error"):
                first_error = fs.data["first_error"]
            timings["total"] = time.monotonic() - t_start
            self.journal.finish_attempt(
                attempt_id, outcome, layer=verdict.layer, summary=verdict.summary(),
                first_error=first_error, caches=ctx.state.get("caches"),
            )
            finished = True
            return AttemptResult(attempt_id, outcome, verdict, first_error, job, timings, ctx.state.get("changes"))
        finally:
            if not finished:
                with contextlib.suppress(Exception):
                    self.journal.finish_attempt(attempt_id, Outcome.INTERRUPTED, layer=verdict.layer, summary="cockpit stopped before a verdict")


class _Tee(Verdict):
    """A sub-verdict whose stages are also copied, prefixed with the action, into the attempt's."""

    def __init__(self, parent: Verdict, prefix: str) -> None:
        super().__init__(prefix)
        self._parent, self._prefix = parent, prefix

    def add(self, stage: Stage) -> Stage:
        super().add(stage)
        self._parent.add(Stage(f"{self._prefix}: {stage.name}", stage.status, stage.layer, stage.detail, stage.evidence,
                               stage.started_at, stage.duration_s, stage.advice, stage.data))
        return stage


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "target"

"""The attempt-on-save loop: run ``engine.attempt(note)`` when the source watcher's changes settle.

:class:`AttemptLoop` consumes a :class:`~.watcher.SourceWatcher`.  One attempt at a time: a save
during a running attempt queues at most one more (further saves merge into it).  ``Busy``
(another cockpit holds the target) is retried every ``busy_retry`` seconds up to
``busy_timeout``.  Hooks (sync or async): ``on_change(changeset)``, ``on_attempt_start(note,
files)``, ``on_verdict(result)``, ``on_busy(exc, waited_s)``, ``on_error(exc)``; a hook that
raises is logged and reported to ``on_error``, and never stops the loop.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from .notes import NoteCounter
from .watcher import ChangeSet, SourceWatcher

__all__ = ["AttemptLoop", "NoteProvider", "deployed_ok"]

log = logging.getLogger(__name__)


def deployed_ok(result: Any) -> bool:
    """Did this attempt really deploy?  (No stage ``deploy: …`` failed or was not reached, and at
    least one passed.)  Objects without a verdict (test doubles) count as deployed."""
    verdict = getattr(result, "verdict", None)
    stages = getattr(verdict, "stages", None)
    if stages is None:
        return True
    dep = [s for s in stages if str(getattr(s, "name", "")).startswith("deploy: ")]
    st = [getattr(getattr(s, "status", None), "value", getattr(s, "status", None)) for s in dep]
    return bool(dep) and not any(x in ("fail", "not reached") for x in st) and any(x in ("ok", "skipped") for x in st)


async def _call(fn: Callable[..., Any] | None, *args: Any) -> Any:
    if fn is None:
        return None
    r = fn(*args)
    if inspect.isawaitable(r):
        r = await r
    return r


NoteProvider = Callable[[dict[str, str], str], "str | None | Awaitable[str | None]"]


class AttemptLoop:
    """Attempt-on-save: run ``engine.attempt(note)`` when the watcher's changes settle.

    ``engine`` needs only ``async attempt(note) -> result`` (raising ``Busy`` when the target is
    held); ``result.attempt`` (id) is used to find the deployed manifest.  ``note(files, default)``
    (optional, sync or async) returns the note for the next attempt, or None to skip it (the
    changes stay pending); without it the :class:`NoteCounter` default is used as is.

    States (``self.state``): ``idle``, ``asking`` (waiting for the note), ``busy-wait``,
    ``running``.  ``self.queued`` is True when a save arrived during an attempt.
    """

    def __init__(
        self,
        engine: Any,
        watcher: SourceWatcher,
        *,
        note: NoteProvider | None = None,
        notes: NoteCounter | None = None,
        enabled: bool = True,
        busy_retry: float = 2.0,
        busy_timeout: float = 600.0,
        manifest_for: Callable[[Any], Mapping[str, str] | None] | None = None,
        on_change: Callable[[ChangeSet], Any] | None = None,
        on_attempt_start: Callable[[str, dict[str, str]], Any] | None = None,
        on_verdict: Callable[[Any], Any] | None = None,
        on_busy: Callable[[BaseException, float], Any] | None = None,
        on_error: Callable[[BaseException], Any] | None = None,
    ) -> None:
        self.engine = engine
        self.watcher = watcher
        self.note = note
        self.notes = notes or NoteCounter(journal=getattr(engine, "journal", None))
        self.enabled = enabled
        self.busy_retry = busy_retry
        self.busy_timeout = busy_timeout
        self.manifest_for = manifest_for if manifest_for is not None else self._default_manifest
        self.on_change = on_change
        self.on_attempt_start = on_attempt_start
        self.on_verdict = on_verdict
        self.on_busy = on_busy
        self.on_error = on_error
        self.state = "idle"
        self.queued = False
        self.last_change: ChangeSet | None = None
        self.results: list[Any] = []
        #: per attempt: seconds from the burst's last seen change / first seen change to engine.attempt()
        self.latencies: list[dict[str, float]] = []
        self._wake = asyncio.Event()
        self._stop = asyncio.Event()

    # -- control --------------------------------------------------------------------------------

    def stop(self) -> None:
        """Make :meth:`run` return once the running attempt (if any) has finished."""
        self._stop.set()
        self._wake.set()

    def trigger(self) -> None:
        """Attempt with whatever is pending as if a save had just settled (e.g. right after the
        TUI re-enabled attempt-on-save); queued if an attempt is in flight."""
        if self.state == "idle":
            self._wake.set()
        else:
            self.queued = True

    # -- running --------------------------------------------------------------------------------

    async def run(self, *, max_attempts: int | None = None) -> list[Any]:
        """Run until :meth:`stop`, cancellation, or ``max_attempts`` attempts; returns the results."""
        consumer = asyncio.create_task(self._consume(), name="cockpit-attempt-loop-consumer")
        done = 0
        try:
            while not self._stop.is_set():
                waiter = asyncio.create_task(self._wake.wait())
                await asyncio.wait({waiter, consumer}, return_when=asyncio.FIRST_COMPLETED)
                if not waiter.done():
                    waiter.cancel()
                    await asyncio.gather(waiter, return_exceptions=True)
                if consumer.done():
                    consumer.result()  # the watcher died: raise its error
                    return self.results
                self._wake.clear()
                if self._stop.is_set():
                    break
                self.queued = False
                if not self.watcher.pending:
                    continue
                res = await self._one()
                if res is not None:
                    done += 1
                    if max_attempts is not None and done >= max_attempts:
                        break
                if self.queued and not self._stop.is_set():
                    self._wake.set()
        finally:
            self.state = "idle"
            consumer.cancel()
            await asyncio.gather(consumer, return_exceptions=True)
        return self.results

    async def _consume(self) -> None:
        async for cs in self.watcher.changes():
            self.last_change = cs
            await self._hook(self.on_change, cs)
            if not self.enabled or not cs:
                continue
            if self.state == "idle":
                self._wake.set()
            else:
                self.queued = True

    async def _hook(self, fn: Callable[..., Any] | None, *args: Any) -> None:
        try:
            await _call(fn, *args)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # broad: a user hook must not stop the loop; logged, then told to on_error
            log.exception("attempt loop hook failed")
            if fn is not self.on_error:
                await self._hook(self.on_error, e)

    async def _one(self, given: str | None = None) -> Any:
        from ..engine import Busy  # late: keeps this module importable from config.py

        cs = self.last_change if given is None else None
        self.state = "asking"
        try:
            files = self.watcher.pending
            if given is not None:
                note: str | None = given
            else:
                default = self.notes.next(sorted(files), _next_id(self.engine))
                note = await _call(self.note, files, default) if self.note is not None else default
            if note is None:
                return None
            self.notes.used(note)
            files = self.watcher.pending
            prev = self.watcher.mark_deployed()
            await self._hook(self.on_attempt_start, note, files)
            waited, t0 = 0.0, time.monotonic()
            if cs is not None:
                self.latencies.append({"from_last_change": t0 - cs.last_seen, "from_first_change": t0 - cs.first_seen})
            while True:
                try:
                    self.state = "running"
                    res = await self.engine.attempt(note, trigger="manual" if given is not None else "on-save")
                    break
                except Busy as e:
                    self.state = "busy-wait"
                    waited = time.monotonic() - t0
                    await self._hook(self.on_busy, e, waited)
                    if waited >= self.busy_timeout:
                        self.watcher.set_baseline(prev)
                        await self._hook(self.on_error, e)
                        return None
                    await asyncio.sleep(min(self.busy_retry, max(0.0, self.busy_timeout - waited)) or self.busy_retry)
                    self.watcher.mark_deployed()  # saves made while waiting go into this attempt
                except asyncio.CancelledError:
                    self.watcher.set_baseline(prev)
                    raise
                except Exception as e:  # noqa: BLE001 - any failure of the attempt goes to on_error (and the debug log); the loop goes on
                    log.debug("attempt failed", exc_info=True)
                    self.watcher.set_baseline(prev)
                    await self._hook(self.on_error, e)
                    return None
            if deployed_ok(res):
                try:
                    manifest = self.manifest_for(res)
                except Exception:  # broad: manifest_for may be the caller's; without it the pending set stays as marked
                    log.warning("could not read the deployed manifest of %r", getattr(res, "attempt", res), exc_info=True)
                    manifest = None
                if manifest:
                    self.watcher.mark_deployed(manifest)
            else:  # nothing reached the target: everything since the last real deploy is still pending
                self.watcher.set_baseline(prev)
            self.results.append(res)
            await self._hook(self.on_verdict, res)
            return res
        finally:
            self.state = "idle"

    async def attempt_now(self, note: str) -> Any:
        """A manual attempt (the TUI's attempt key) through the loop, so the watcher's idea of
        what is deployed stays right.  Raises ``Busy`` while an on-save attempt is in flight."""
        from ..engine import Busy

        if self.state != "idle":
            raise Busy(f"an on-save attempt is {self.state}")
        return await self._one(note)

    def _default_manifest(self, res: Any) -> Mapping[str, str] | None:
        journal = getattr(self.engine, "journal", None)
        aid = getattr(res, "attempt", None)
        if journal is None or not isinstance(aid, int):
            return None
        from ..changes import deployed_manifest

        return deployed_manifest(Path(journal.path).parent, aid)



def _next_id(engine: Any) -> int | None:
    journal = getattr(engine, "journal", None)
    try:
        return journal.next_id() if journal is not None else None
    except (OSError, ValueError):  # only the default note's attempt number is lost
        log.warning("cannot read the next attempt id from the journal", exc_info=True)
        return None

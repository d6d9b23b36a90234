"""The source watcher: debounced, filtered, content-checked changes of ``[deploy] source``.

:class:`SourceWatcher` watches the source with :func:`watchfiles.awatch` (inotify on Linux;
polling where ``WATCHFILES_FORCE_POLLING`` is set; see :mod:`cockpit.core.fswatch`) and yields a
:class:`ChangeSet` once a burst of saves has been quiet for ``debounce`` seconds.  Which files
count and how they are signed is :class:`~.source.SourceFiles`' job.  A file only counts when its
*content* changed, so ``touch``, a "save all" that rewrites identical bytes, or vim's ``4913``
probe file trigger nothing, and an edit that is undone before the next deploy drops out again.
The pending set accumulates until :meth:`SourceWatcher.mark_deployed`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..fswatch import FsWatch
from .source import SourceFiles

if TYPE_CHECKING:  # pragma: no cover
    from watchfiles import Change

__all__ = ["ChangeSet", "SourceWatcher"]

log = logging.getLogger(__name__)

#: how often the watch looks at inotify's events (:mod:`..fswatch`): a save reaches the loop 0.1–0.2 s
#: after it, well under the loop's debounce, for 0.07 % of a core while idle (watchfiles' 50 ms: 0.12 %)
WATCH_STEP_MS = 100


@dataclass(frozen=True)
class ChangeSet:
    """What changed since the last deploy, yielded when a burst of saves settles."""

    #: every file whose content differs from the last deploy: relpath → "added" | "modified" | "removed"
    pending: Mapping[str, str]
    #: the files whose content changed in this burst (some may have been reverted: not in ``pending``)
    latest: tuple[str, ...]
    #: time.monotonic() when the burst's first / last change was seen, and when it settled
    first_seen: float
    last_seen: float
    settled_at: float

    @property
    def files(self) -> list[str]:
        return sorted(self.pending)

    def __bool__(self) -> bool:
        return bool(self.pending)

    def describe(self, limit: int = 4) -> str:
        files = self.files
        if not files:
            return "no changes since the last deploy"
        shown = ", ".join(files[:limit]) + (f", … {len(files) - limit} more" if len(files) > limit else "")
        return f"{len(files)} file{'s' if len(files) != 1 else ''} changed: {shown}"


def _kind(old: str | None, new: str | None) -> str:
    return "added" if old is None else ("removed" if new is None else "modified")


class SourceWatcher:
    """Debounced, filtered, content-checked changes of the deploy source (see the module doc).

    Use as ``async with SourceWatcher(src, exclude) as w: async for cs in w: ...`` (or
    :meth:`start` / :meth:`close`).  One consumer of :meth:`changes` at a time.  Watching is
    established when :meth:`start` returns: a save after that is seen.
    """

    def __init__(
        self,
        source: str | os.PathLike[str],
        exclude: Iterable[str] = (),
        *,
        debounce: float = 1.0,
        gitignore: bool = True,
        ignore_editor_files: bool = True,
        baseline: Mapping[str, str] | None = None,
        hash_limit: int = 64 << 20,
        force_polling: bool | None = None,
        on_activity: Callable[[list[str]], Any] | None = None,
        ignore_paths: Iterable[str | os.PathLike[str]] = (),
    ) -> None:
        self.stats = {"batches": 0, "paths": 0, "ignored": 0, "unchanged": 0, "changed": 0, "git_calls": 0}
        self.files = SourceFiles(source, exclude, gitignore=gitignore, ignore_editor_files=ignore_editor_files,
                                 hash_limit=hash_limit, ignore_paths=ignore_paths, stats=self.stats)
        self.debounce = float(debounce)
        self.force_polling = force_polling
        self.on_activity = on_activity
        self._initial_baseline = dict(baseline) if baseline is not None else None
        self._baseline: dict[str, str] = {}
        self._seen: dict[str, str | None] = {}
        self._pending: dict[str, str] = {}
        self._burst: set[str] = set()
        self._first_seen: float | None = None
        self._last_seen = 0.0
        self._wake: asyncio.Event | None = None
        self._watch: FsWatch | None = None
        self._closed = False
        self.last_error: BaseException | None = None

    @property
    def source(self) -> Path:
        return self.files.source

    @property
    def exclude(self) -> list[str]:
        return self.files.exclude

    @property
    def root(self) -> Path:
        """The directory watched (the source, or its parent for a single-file source)."""
        return self.files.root

    @property
    def git_dir(self) -> str | None:
        """The git work tree whose .gitignore applies (None when none does)."""
        return self.files.git_dir

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> SourceWatcher:
        if self._watch is not None:
            return self
        if not self.source.exists():
            raise FileNotFoundError(f"deploy source {self.source} does not exist")
        self.files.locate()
        self._wake = asyncio.Event()
        await asyncio.to_thread(self._scan)
        self._watch = FsWatch([str(self.root)], self._on_batch, recursive=self.files.single is None,
                              force_polling=self.force_polling, name="cockpit-source-watcher", on_error=self._died,
                              step_ms=WATCH_STEP_MS)
        await self._watch.start()
        return self

    async def close(self) -> None:
        self._closed = True
        if self._wake is not None:
            self._wake.set()
        watch, self._watch = self._watch, None
        if watch is not None:
            await watch.close()

    async def __aenter__(self) -> SourceWatcher:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- state ----------------------------------------------------------------------------------

    @property
    def pending(self) -> dict[str, str]:
        """relpath → "added" | "modified" | "removed" since the last deploy (a copy)."""
        return dict(sorted(self._pending.items()))

    @property
    def baseline(self) -> dict[str, str]:
        """relpath → content signature (sha256) of what counts as deployed (a copy)."""
        return dict(self._baseline)

    @property
    def settling(self) -> bool:
        """A burst of changes was seen and has not settled yet."""
        return bool(self._burst)

    def mark_deployed(self, manifest: Mapping[str, str] | None = None) -> dict[str, str]:
        """The current source (or ``manifest``: relpath → sha256 of what was really deployed) is
        now the deployed state; returns the previous baseline (give it to :meth:`set_baseline` to
        undo, e.g. when the target turned out busy)."""
        prev = dict(self._baseline)
        if manifest is None:
            self.set_baseline({r: s for r, s in self._seen.items() if s is not None})
        else:
            # the manifest also lists files this watcher ignores (.gitignore): keep the ones it
            # tracks; a file too big to hash here has a stat signature that cannot be compared
            # with the manifest's sha256: what was seen counts as deployed
            self.set_baseline({r: (self._seen[r] if str(self._seen.get(r) or "").startswith("stat:") else s)  # type: ignore[misc]
                               for r, s in manifest.items() if r in self._seen})
        return prev

    def set_baseline(self, baseline: Mapping[str, str]) -> None:
        self._baseline = dict(baseline)
        for r in [r for r, s in self._seen.items() if s is None and r not in self._baseline]:
            del self._seen[r]
        self._pending = {r: _kind(self._baseline.get(r), self._seen.get(r))
                         for r in set(self._seen) | set(self._baseline) if self._seen.get(r) != self._baseline.get(r)}

    # -- the stream -----------------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[ChangeSet]:
        return self.changes()

    async def changes(self) -> AsyncIterator[ChangeSet]:
        """Yield a :class:`ChangeSet` after each burst of real changes has been quiet ``debounce`` s."""
        if self._watch is None:
            await self.start()
        assert self._wake is not None
        while not self._closed:
            await self._wake.wait()
            while not self._closed:
                remaining = self._last_seen + self.debounce - time.monotonic()
                if remaining <= 0:
                    break
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), remaining)
                except asyncio.TimeoutError:
                    pass  # quiet for `remaining` s: the loop condition sees the burst settled
            self._wake.clear()
            if self._closed:
                return
            err = self._watch.error() if self._watch is not None else None
            if err is not None:
                raise err
            if not self._burst:
                continue
            burst, self._burst = self._burst, set()
            first, self._first_seen = self._first_seen or self._last_seen, None
            yield ChangeSet(self.pending, tuple(sorted(burst)), first, self._last_seen, time.monotonic())

    # -- internals ------------------------------------------------------------------------------

    def _scan(self) -> None:
        """Find the git work tree, then hash every file that counts (runs in a thread)."""
        self.files.find_git()
        sigs, _ = self.files.classify(self.files.walk())
        seen = {r: s for r, s in sigs.items() if s is not None}
        self._seen = dict(seen)
        if self._initial_baseline is not None:
            self.set_baseline({r: s for r, s in self._initial_baseline.items() if r in seen})
        else:
            self._baseline = seen
            self._pending = {}

    async def _on_batch(self, batch: set[tuple[Change, str]]) -> None:
        rels = {r for r in (self.files.rel(p) for _, p in batch) if r is not None}
        self.stats["batches"] += 1
        self.stats["paths"] += len(rels)
        rels = self.files.expand(rels, self._seen.keys())
        sigs, ignored = await asyncio.to_thread(self.files.classify, rels)
        self.stats["ignored"] += ignored
        self._apply(sigs)

    def _died(self, e: BaseException) -> None:
        """The watch task died: remember why and wake the consumer, whom changes() raises it to."""
        self.last_error = e
        log.warning("source watcher stopped: %s", e)
        if self._wake is not None:
            self._wake.set()

    def _apply(self, sigs: Mapping[str, str | None]) -> None:
        changed: list[str] = []
        for rel, sig in sigs.items():
            if self._seen.get(rel) == sig:
                self.stats["unchanged"] += 1
                continue
            changed.append(rel)
            if sig is None and rel not in self._baseline:
                self._seen.pop(rel, None)
            else:
                self._seen[rel] = sig
            base = self._baseline.get(rel)
            if sig != base:
                self._pending[rel] = _kind(base, sig)
            else:
                self._pending.pop(rel, None)
        if not changed:
            return
        self.stats["changed"] += len(changed)
        now = time.monotonic()
        if self._first_seen is None:
            self._first_seen = now
        self._last_seen = now
        self._burst.update(changed)
        assert self._wake is not None
        self._wake.set()
        if self.on_activity is not None:
            try:
                r = self.on_activity(sorted(changed))
                if inspect.isawaitable(r):
                    asyncio.ensure_future(r)
            except Exception:  # broad: a user hook must not stop the watcher; logged with its traceback
                log.exception("on_activity hook failed")

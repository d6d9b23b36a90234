"""The faster edit → attempt loop: watch the deploy source, run an attempt when a save settles.

Two pieces, both asyncio and UI-free:

:class:`SourceWatcher`
    Watches ``[deploy] source`` with :func:`watchfiles.awatch` (inotify on Linux; polling where
    ``WATCHFILES_FORCE_POLLING`` is set) and yields a debounced :class:`ChangeSet` once a burst of
    saves has been quiet for ``debounce`` seconds.  Which files count: the same ``[deploy]
    exclude`` semantics as :func:`~cockpit.core.actions.deploy.collect_files` (fnmatch on the
    name, the relative path, or a directory prefix, at every level), minus what ``.gitignore``
    ignores when the source is in a git work tree (``git check-ignore --stdin``, one call per
    batch of events), minus editor noise (swap files, ``*~``, ``.#*``, ``__pycache__``, ``.git``…,
    the same lists as watchfiles' ``DefaultFilter``).  A file only counts when its *content*
    changed (SHA-256; a stat signature above ``hash_limit`` bytes), so ``touch``, a "save all"
    that rewrites identical bytes, or vim's ``4913`` probe file trigger nothing, and an edit that
    is undone before the next deploy drops out again.  The pending set accumulates until
    :meth:`SourceWatcher.mark_deployed`.

:class:`AttemptLoop`
    Consumes the watcher and runs ``engine.attempt(note)`` when a change set settles.  One attempt
    at a time: a save during a running attempt queues at most one more (further saves merge into
    it).  ``Busy`` (another cockpit holds the target) is retried every ``busy_retry`` seconds up to
    ``busy_timeout``.  Hooks (sync or async): ``on_change(changeset)``, ``on_attempt_start(note,
    files)``, ``on_verdict(result)``, ``on_busy(exc, waited_s)``, ``on_error(exc)``.

:class:`~cockpit.config.LoopConfig` is the ``[loop]`` config section.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Iterable, Mapping

from ..config import LoopConfig
from .actions.deploy import _excluded as deploy_excluded

__all__ = [
    "LoopConfig",
    "loop_config",
    "ChangeSet",
    "SourceWatcher",
    "AttemptLoop",
    "NoteCounter",
    "is_excluded",
    "is_editor_noise",
    "strip_counter",
    "deployed_ok",
    "watcher_for",
]

log = logging.getLogger(__name__)


def loop_config(cfg: Any) -> LoopConfig:
    """``cfg.loop`` when config.py has the ``[loop]`` section, else the defaults."""
    lc = getattr(cfg, "loop", None)
    return lc if isinstance(lc, LoopConfig) else LoopConfig()


# --------------------------------------------------------------------------------------------
# which paths count
# --------------------------------------------------------------------------------------------

#: watchfiles' DefaultFilter lists: editor and tool noise nobody means to deploy-and-run.
NOISE_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn", ".tox", ".venv", ".idea", "node_modules",
                        ".mypy_cache", ".pytest_cache", ".hypothesis"})
_NOISE_NAME = re.compile(r"\.py[cod]$|\.___jb_...___$|\.sw.$|~$|^\.#|^\.DS_Store$|^flycheck_")


_excluded = deploy_excluded  # one rule for what is deployed and what is watched


def is_excluded(rel: str, patterns: Iterable[str]) -> bool:
    """True when ``collect_files`` would not deploy ``rel`` (a file path relative to the source).

    ``collect_files`` prunes a directory whose relative path or name matches, then tests each
    file; this applies the same test to every prefix of ``rel``.
    """
    pats = list(patterns)
    if not pats:
        return False
    parts = [p for p in rel.replace(os.sep, "/").split("/") if p not in ("", ".")]
    for i in range(len(parts)):
        if _excluded("/".join(parts[: i + 1]), parts[i], pats):
            return True
    return False


def is_editor_noise(rel: str) -> bool:
    parts = rel.replace(os.sep, "/").split("/")
    return any(p in NOISE_DIRS for p in parts[:-1]) or parts[-1] in NOISE_DIRS or bool(_NOISE_NAME.search(parts[-1]))


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------------------------
# change sets
# --------------------------------------------------------------------------------------------


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
        src = Path(os.path.abspath(os.path.expanduser(os.fspath(source))))
        self.ignore_paths = [Path(os.path.abspath(os.path.expanduser(os.fspath(p)))) for p in ignore_paths]
        self._ignore_rels: tuple[str, ...] = ()
        self.source = src
        self.exclude = list(exclude)
        self.debounce = float(debounce)
        self.use_gitignore = gitignore
        self.ignore_editor_files = ignore_editor_files
        self.hash_limit = hash_limit
        self.force_polling = force_polling
        self.on_activity = on_activity
        self._initial_baseline = dict(baseline) if baseline is not None else None
        self._single: str | None = None  # file name when the source is a single file
        self.root = src
        self._roots: tuple[str, ...] = ()
        self.git_dir: str | None = None  # work tree top when .gitignore applies
        self._baseline: dict[str, str] = {}
        self._seen: dict[str, str | None] = {}
        self._pending: dict[str, str] = {}
        self._burst: set[str] = set()
        self._first_seen: float | None = None
        self._last_seen = 0.0
        self._wake: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        self._reader: asyncio.Task[None] | None = None
        self._closed = False
        self.stats = {"batches": 0, "paths": 0, "ignored": 0, "unchanged": 0, "changed": 0, "git_calls": 0}
        self.last_error: BaseException | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> "SourceWatcher":
        if self._reader is not None:
            return self
        if not self.source.exists():
            raise FileNotFoundError(f"deploy source {self.source} does not exist")
        if self.source.is_file():
            self._single, self.root = self.source.name, self.source.parent
        self._roots = tuple(dict.fromkeys([str(self.root), os.path.realpath(self.root)]))
        # only paths strictly inside the source: ignoring an ancestor would ignore everything
        self._ignore_rels = tuple(r for r in (self._rel(str(p)) for p in self.ignore_paths) if r)
        self._wake, self._stop = asyncio.Event(), asyncio.Event()
        await asyncio.to_thread(self._scan)
        started = asyncio.Event()
        self._reader = asyncio.create_task(self._read(started), name="cockpit-source-watcher")
        await started.wait()
        # awatch creates its RustNotify (which adds the inotify watches synchronously) in the same
        # task step that set `started`, before its first await; one more turn lets that step finish.
        await asyncio.sleep(0)
        if self._reader.done():
            self._reader.result()  # raises what went wrong (e.g. permission denied)
        return self

    async def close(self) -> None:
        self._closed = True
        if self._stop is not None:
            self._stop.set()
        if self._wake is not None:
            self._wake.set()
        t, self._reader = self._reader, None
        if t is not None and not t.done():
            try:
                await asyncio.wait_for(asyncio.shield(t), 2.0)
            except (asyncio.TimeoutError, asyncio.CancelledError, Exception):
                t.cancel()
                await asyncio.gather(t, return_exceptions=True)

    async def __aenter__(self) -> "SourceWatcher":
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
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
        if self._reader is None:
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
                    pass
            self._wake.clear()
            if self._closed:
                return
            if self._reader is not None and self._reader.done() and not self._reader.cancelled() and self._reader.exception():
                raise self._reader.exception()  # type: ignore[misc]
            if not self._burst:
                continue
            burst, self._burst = self._burst, set()
            first, self._first_seen = self._first_seen or self._last_seen, None
            yield ChangeSet(self.pending, tuple(sorted(burst)), first, self._last_seen, time.monotonic())

    # -- internals ------------------------------------------------------------------------------

    def _git(self, args: list[str], stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes] | None:
        try:
            return subprocess.run(["git", *args], cwd=self.root, input=stdin, capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None

    def _scan(self) -> None:
        """Find the git work tree, then hash every file that counts (runs in a thread)."""
        if self.use_gitignore:
            r = self._git(["rev-parse", "--show-toplevel"])
            if r is not None and r.returncode == 0 and r.stdout.strip():
                self.git_dir = r.stdout.decode("utf-8", "replace").strip()
                # a source that is itself git-ignored (a build output) is watched without .gitignore
                probe = self._single or "."
                r2 = self._git(["check-ignore", "-q", "--", probe])
                if r2 is not None and r2.returncode == 0:
                    self.git_dir = None
        rels: list[str] = []
        if self._single:
            rels = [self._single]
        else:
            for root, dirs, files in os.walk(self.root):
                rel_root = os.path.relpath(root, self.root)
                rel_root = "" if rel_root == "." else rel_root
                dirs[:] = sorted(d for d in dirs if self._static_ok(os.path.join(rel_root, d), is_dir=True))
                rels.extend(os.path.join(rel_root, f) for f in files)
        sigs, _ = self._classify(rels)
        self._seen = {r: s for r, s in sigs.items() if s is not None}
        if self._initial_baseline is not None:
            self.set_baseline({r: s for r, s in self._initial_baseline.items() if r in self._seen})
        else:
            self._baseline = dict(self._seen)
            self._pending = {}

    def _static_ok(self, rel: str, *, is_dir: bool = False) -> bool:
        rel = rel.replace(os.sep, "/")
        if self._single:
            return rel == self._single
        if ".git" in rel.split("/"):
            return False
        if any(rel == r or rel.startswith(r + "/") for r in self._ignore_rels):
            return False
        if self.ignore_editor_files and (is_editor_noise(rel) or (is_dir and rel.split("/")[-1] in NOISE_DIRS)):
            return False
        return not is_excluded(rel, self.exclude)

    def _git_ignored(self, rels: list[str]) -> set[str]:
        if not self.git_dir or not rels:
            return set()
        self.stats["git_calls"] += 1
        r = self._git(["check-ignore", "--stdin", "-z"], stdin=b"".join(r.encode() + b"\0" for r in rels))
        if r is None or r.returncode not in (0, 1):
            return set()
        return {p.decode("utf-8", "surrogateescape") for p in r.stdout.split(b"\0") if p}

    def _sig(self, rel: str) -> str | None:
        p = os.path.join(self.root, rel)
        try:
            st = os.stat(p)
            if not os.path.isfile(p):
                return None
            if st.st_size > self.hash_limit:
                return f"stat:{st.st_size}:{st.st_mtime_ns}"
            return _sha256(p)
        except OSError:
            return None

    def _classify(self, rels: Iterable[str]) -> tuple[dict[str, str | None], int]:
        """Filter (static, then .gitignore) and hash; returns ({rel: sig or None}, ignored)."""
        cand = sorted({r.replace(os.sep, "/") for r in rels})
        ok = [r for r in cand if self._static_ok(r)]
        ignored = self._git_ignored(ok)
        keep = [r for r in ok if r not in ignored]
        return {r: self._sig(r) for r in keep}, len(cand) - len(keep)

    def _rel(self, path: str) -> str | None:
        for root in self._roots:
            rel = os.path.relpath(path, root)
            if not rel.startswith(".."):
                return "" if rel == "." else rel
        return None

    def _expand(self, raw: Iterable[str]) -> set[str]:
        """Event paths → file relpaths (a directory created or moved in: its files; one deleted
        or moved away: the files known under it)."""
        out: set[str] = set()
        for rel in raw:
            if not rel:
                continue
            p = os.path.join(self.root, rel)
            if os.path.isdir(p) and not self._single:
                if not self._static_ok(rel, is_dir=True):
                    continue
                for root, dirs, files in os.walk(p):
                    rr = os.path.relpath(root, self.root)
                    dirs[:] = [d for d in dirs if self._static_ok(os.path.join(rr, d), is_dir=True)]
                    out.update(os.path.join(rr, f) for f in files)
            else:
                out.add(rel)
                if not os.path.exists(p):
                    prefix = rel.replace(os.sep, "/") + "/"
                    out.update(k for k in self._seen if k.startswith(prefix))
        return out

    async def _read(self, started: asyncio.Event) -> None:
        from watchfiles import awatch

        assert self._stop is not None
        started.set()
        try:
            async for batch in awatch(
                str(self.root),
                watch_filter=None,
                stop_event=self._stop,
                recursive=self._single is None,
                force_polling=self.force_polling,
                ignore_permission_denied=True,
            ):
                rels = {r for r in (self._rel(p) for _, p in batch) if r is not None}
                self.stats["batches"] += 1
                self.stats["paths"] += len(rels)
                rels = self._expand(rels)
                sigs, ignored = await asyncio.to_thread(self._classify, rels)
                self.stats["ignored"] += ignored
                self._apply(sigs)
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # surfaced to the consumer by changes()
            self.last_error = e
            log.warning("source watcher stopped: %s", e)
            if self._wake is not None:
                self._wake.set()
            raise

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
            except Exception:  # a hook must not stop the watcher
                log.exception("on_activity hook failed")


# --------------------------------------------------------------------------------------------
# notes for on-save attempts
# --------------------------------------------------------------------------------------------

_COUNTER = re.compile(r"\s*\(#\d+\)\s*$")


def strip_counter(note: str) -> str:
    """``"same hypothesis (#3)"`` → ``"same hypothesis"``."""
    return _COUNTER.sub("", note or "").strip()


class NoteCounter:
    """Notes for headless on-save attempts: the last hypothesis again, with a try counter.

    The first try of a hypothesis keeps the note as written; later ones use ``template``
    (default ``"{last_note} (#{n})"``: ``"same hypothesis (#3)"``, n counted from the journal, so
    a restarted ``cockpit watch`` keeps counting).  With no hypothesis at all the note says which
    files were saved.
    """

    def __init__(self, base: str | None = None, *, template: str = "{last_note} (#{n})", journal: Any = None) -> None:
        self.template = template
        self.journal = journal
        self._n: dict[str, int] = {}
        if base is None and journal is not None:
            try:
                recs = journal.attempts()
            except Exception:
                recs = []
            base = next((strip_counter(r.note) for r in reversed(recs) if strip_counter(r.note)), "")
        self.base = strip_counter(base or "")

    def _tries(self, base: str) -> int:
        if self.journal is not None:
            try:
                return sum(1 for r in self.journal.attempts() if strip_counter(r.note) == base)
            except Exception:
                pass
        return self._n.get(base, 0)

    def next(self, files: Iterable[str] = (), attempt: int | None = None) -> str:
        files = list(files)
        shown = ", ".join(files[:3]) + (f", … {len(files) - 3} more" if len(files) > 3 else "")
        base = self.base
        if not base:
            return f"on save: {shown}" if shown else "on save"
        n = self._tries(base) + 1
        if n <= 1:
            return base
        try:
            return self.template.format(last_note=base, n=n, attempt=attempt if attempt is not None else "?", files=shown)
        except (KeyError, IndexError, ValueError):
            return f"{base} (#{n})"

    def used(self, note: str) -> None:
        """Record that ``note`` was used (a new hypothesis becomes the base for the next ones)."""
        base = strip_counter(note)
        if base and not base.startswith("on save"):
            self.base = base
        self._n[base] = self._n.get(base, 0) + 1


# --------------------------------------------------------------------------------------------
# the attempt loop
# --------------------------------------------------------------------------------------------


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
        except Exception as e:
            log.exception("attempt loop hook failed")
            if fn is not self.on_error:
                await self._hook(self.on_error, e)

    async def _one(self, given: str | None = None) -> Any:
        from .engine import Busy  # late: keeps this module importable from config.py

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
                    res = await self.engine.attempt(note)
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
                except Exception as e:
                    self.watcher.set_baseline(prev)
                    await self._hook(self.on_error, e)
                    return None
            if deployed_ok(res):
                try:
                    manifest = self.manifest_for(res)
                except Exception:
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
        from .engine import Busy

        if self.state != "idle":
            raise Busy(f"an on-save attempt is {self.state}")
        return await self._one(note)

    def _default_manifest(self, res: Any) -> Mapping[str, str] | None:
        journal = getattr(self.engine, "journal", None)
        aid = getattr(res, "attempt", None)
        if journal is None or not isinstance(aid, int):
            return None
        from .changes import deployed_manifest

        return deployed_manifest(Path(journal.path).parent, aid)


def watcher_for(cfg: Any, **kw: Any) -> SourceWatcher:
    """A :class:`SourceWatcher` for ``[deploy] source`` with everything the config says:
    ``[deploy] exclude``, ``[loop] debounce`` and ``gitignore``, and, so that cockpit's own writes
    never trigger an attempt, the journal directory (and for a local target the deploy dest, the
    job's workdir and log directory) when they lie inside the source.  ``kw`` overrides."""
    lc = loop_config(cfg)
    ignore: list[Path] = [Path(cfg.journal_path).parent]
    if getattr(getattr(cfg, "target", None), "transport", None) == "local":
        for p in (cfg.deploy.dest, cfg.job.workdir, os.path.dirname(cfg.job.log)):
            if p:
                ignore.append(Path(p))
    args: dict[str, Any] = {"debounce": lc.debounce, "gitignore": lc.gitignore, "ignore_paths": ignore}
    args.update(kw)
    return SourceWatcher(cfg.deploy_source, cfg.deploy.exclude, **args)


def _next_id(engine: Any) -> int | None:
    journal = getattr(engine, "journal", None)
    try:
        return journal.next_id() if journal is not None else None
    except Exception:
        return None

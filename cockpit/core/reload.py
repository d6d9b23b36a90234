"""Live reload of the config file and theme files.

:class:`FileReloader` watches a few files (each through its directory, non-recursively, so an
editor's save-by-rename is seen too), waits until a burst of writes has been quiet for
``debounce`` seconds (a half-written file is never parsed), re-parses a file only when its bytes
changed, and calls ``on_ok(path, value)`` or ``on_error(path, exc)``.  The last good value stays
in :attr:`FileReloader.values` after an error.

:class:`ConfigReloader` is that for the config file with :func:`cockpit.core.config.load_config`:
``on_change(new_cfg)`` for a valid edit, ``on_error(ConfigError)`` for an invalid one (the error
names the file and the dotted key) while :attr:`ConfigReloader.config` keeps the old config.
:func:`changed_keys` says which dotted keys an edit changed, :func:`needs_reconnect` whether
they need a new connection to the target.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import inspect
import logging
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .fswatch import FsWatch, stop_task

if TYPE_CHECKING:  # pragma: no cover
    from watchfiles import Change

__all__ = ["FileReloader", "ConfigReloader", "changed_keys", "needs_reconnect", "RECONNECT_SECTIONS"]

log = logging.getLogger(__name__)

#: how often the watch looks at inotify's events (:mod:`.fswatch`): a config or theme edit is seen
#: within about a second, and the watch costs 0.03 % of a core instead of 0.12 % while idle
RELOAD_STEP_MS = 500

#: sections whose change needs a new transport (the engine must be rebuilt), not just a new cfg
RECONNECT_SECTIONS = ("target", "ssh")


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


async def _call(fn: Callable[..., Any] | None, *args: Any) -> None:
    if fn is None:
        return
    try:
        r = fn(*args)
        if inspect.isawaitable(r):
            await r
    except asyncio.CancelledError:
        raise
    except Exception:  # broad: a failing user callback must not stop the reloader; logged with its traceback
        log.exception("reload callback failed")


class FileReloader:
    """Watch ``paths``; on a settled change re-parse with ``parse(path)`` (see the module doc)."""

    def __init__(
        self,
        paths: Iterable[str | os.PathLike[str]],
        parse: Callable[[Path], Any],
        on_ok: Callable[[Path, Any], Any] | None = None,
        on_error: Callable[[Path, BaseException], Any] | None = None,
        *,
        debounce: float = 0.2,
        errors: tuple[type[BaseException], ...] = (Exception,),
        parse_now: bool = True,
        force_polling: bool | None = None,
    ) -> None:
        self.paths = [Path(os.path.abspath(os.path.expanduser(os.fspath(p)))) for p in paths]
        self.parse = parse
        self.on_ok = on_ok
        self.on_error = on_error
        self.debounce = debounce
        self.error_types = errors
        self.parse_now = parse_now
        self.force_polling = force_polling
        #: the last good value per path, and the current error per path (cleared by a good edit)
        self.values: dict[Path, Any] = {}
        self.errors: dict[Path, BaseException] = {}
        self.reloads = 0
        self._digests: dict[Path, str | None] = {}
        self._wanted: set[str] = set()
        self._dirty: set[Path] = set()
        self._last = 0.0
        self._watch: FsWatch | None = None
        self._settler: asyncio.Task[None] | None = None

    async def start(self) -> FileReloader:
        if self._watch is not None:
            return self
        for p in self.paths:
            self._digests[p] = _digest(p)
            if self.parse_now and p not in self.values:
                try:
                    self.values[p] = self.parse(p)
                except self.error_types as e:
                    self.errors[p] = e
        dirs = sorted({str(p.parent) for p in self.paths if p.parent.is_dir()})
        if not dirs:
            raise FileNotFoundError(f"none of the directories of {', '.join(map(str, self.paths))} exist")
        self._wanted = {str(p) for p in self.paths}
        self._watch = FsWatch(dirs, self._on_batch, recursive=False, force_polling=self.force_polling, name="cockpit-file-reloader",
                              step_ms=RELOAD_STEP_MS)
        await self._watch.start()
        return self

    async def close(self) -> None:
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.stop()
        await stop_task(self._settler)  # a reload under way finishes first
        if watch is not None:
            await watch.close()
        await stop_task(self._settler)  # one started by a last batch while the watch was ending
        self._settler = None

    async def __aenter__(self) -> FileReloader:
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def check(self, path: str | os.PathLike[str] | None = None, *, force: bool = False) -> None:
        """Re-read now (all paths, or one); ``force`` re-parses even when the bytes are the same."""
        targets = self.paths if path is None else [Path(os.path.abspath(os.fspath(path)))]
        for p in targets:
            await self._reload(p, force=force)

    async def _on_batch(self, batch: set[tuple[Change, str]]) -> None:
        hit = {Path(os.path.abspath(p)) for _, p in batch if os.path.abspath(p) in self._wanted}
        if not hit:
            return
        self._dirty |= hit
        self._last = time.monotonic()
        if self._settler is None or self._settler.done():
            self._settler = asyncio.create_task(self._settle())

    async def _settle(self) -> None:
        while True:
            remaining = self._last + self.debounce - time.monotonic()
            if remaining <= 0:
                break
            await asyncio.sleep(remaining)
        dirty, self._dirty = self._dirty, set()
        for p in sorted(dirty):
            await self._reload(p)

    async def _reload(self, p: Path, *, force: bool = False) -> None:
        d = _digest(p)
        if d == self._digests.get(p) and not force:
            return
        self._digests[p] = d
        try:
            value = self.parse(p)
        except self.error_types as e:
            self.errors[p] = e
            await _call(self.on_error, p, e)
            return
        self.values[p] = value
        self.errors.pop(p, None)
        self.reloads += 1
        await _call(self.on_ok, p, value)


class ConfigReloader(FileReloader):
    """Reload the config file on save: ``on_change(new_cfg)``, or ``on_error(ConfigError)`` while
    :attr:`config` keeps the last good one."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        on_change: Callable[[Any], Any] | None = None,
        on_error: Callable[[Any], Any] | None = None,
        *,
        current: Any = None,
        debounce: float = 0.2,
        force_polling: bool | None = None,
    ) -> None:
        from .config import ConfigError, load_config

        self._on_change, self._on_cfg_error = on_change, on_error
        super().__init__([path], load_config, self._ok, self._err, debounce=debounce, errors=(ConfigError,),
                         parse_now=current is None, force_polling=force_polling)
        self.path = self.paths[0]
        if current is not None:
            self.values[self.path] = current

    @property
    def config(self) -> Any:
        """The last valid config (None when the file has never been valid)."""
        return self.values.get(self.path)

    @property
    def error(self) -> Any:
        """The current ConfigError (None when the file on disk is valid)."""
        return self.errors.get(self.path)

    async def _ok(self, path: Path, cfg: Any) -> None:
        await _call(self._on_change, cfg)

    async def _err(self, path: Path, e: BaseException) -> None:
        await _call(self._on_cfg_error, e)


def _plain(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return dataclasses.asdict(v)
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def _flatten(cfg: Any) -> dict[str, Any]:
    """section.key → value for every section that is a dataclass; other fields whole."""
    out: dict[str, Any] = {}
    if not (dataclasses.is_dataclass(cfg) and not isinstance(cfg, type)):
        return {"": cfg}
    for f in dataclasses.fields(cfg):
        if f.name == "path":
            continue
        v = getattr(cfg, f.name)
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            for g in dataclasses.fields(v):
                out[f"{f.name}.{g.name}"] = _plain(getattr(v, g.name))
        else:
            out[f.name] = _plain(v)
    return out


def changed_keys(old: Any, new: Any) -> list[str]:
    """Dotted keys whose value differs between two configs (``["job.startup_timeout", "ui.theme"]``)."""
    a, b = _flatten(old), _flatten(new)
    return sorted(k for k in set(a) | set(b) if a.get(k, _MISSING) != b.get(k, _MISSING))


def needs_reconnect(keys: Iterable[str]) -> bool:
    """True when a change in these keys needs a new transport (rebuild the engine)."""
    return any(k.split(".", 1)[0] in RECONNECT_SECTIONS for k in keys)


_MISSING = object()

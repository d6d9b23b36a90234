"""Metrics beside the journal: one file per attempt, written as lines arrive, read back after a restart.

``<journal dir>/metrics/attempt-<N>.jsonl`` (0600 in a 0700 directory, like the journal), JSON Lines:

``{"n": LINE, "t": TIME, "v": {"loss": 1.83}, "s": 120, "tot": 1000, "b": [120, 1000, null]}``
    one reading of log line ``LINE`` (its number from the log's start), read at ``TIME``: the
    values, and the step, total and progress bar the line named (only those it named);
``{"snap": {...}}``
    the whole state (:meth:`AttemptMetrics.snapshot`): the thinned series, the step clock.

Loading replays the file: a snapshot replaces the state, a reading is applied unless its line
was applied already; a torn or undecodable line is skipped.  Readings are appended once per
read of the log (one write); once ``cap`` readings follow the last snapshot, the file is
rewritten as one snapshot (a temporary file renamed over it), so a file stays small however
long the job runs.  Two cockpits recording the same attempt at the moment of a rewrite may lose
the other's last readings (the next read of the log does not bring them back: they are older
than the lines already applied).

A metric whose name the redactor changes (a token shape followed by a number) is never kept.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import time
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from ..journal.files import open_append, private_dir, write_line
from ..redact import Redactor
from .parse import MetricParser, Reading
from .series import DEFAULT_CAP, AttemptMetrics

if TYPE_CHECKING:
    from ..config import Config

__all__ = ["MetricsStore", "Recorder", "metrics_path", "load_attempt"]

log = logging.getLogger(__name__)

#: attempts kept in memory by one store (the live one and a few overlays)
KEEP = 8
#: readings applied together (a long read is applied as it is judged, in steps of a millisecond or so)
APPLY_EVERY = 256


def metrics_path(journal_dir: str | os.PathLike[str], attempt: int) -> Path:
    return Path(journal_dir) / "metrics" / f"attempt-{attempt}.jsonl"


def load_attempt(path: Path, attempt: int, cap: int = DEFAULT_CAP) -> tuple[AttemptMetrics, int]:
    """``(metrics, readings since the last snapshot)`` replayed from ``path`` (empty when missing)."""
    m = AttemptMetrics(attempt, cap)
    since = 0
    try:
        data = path.read_bytes()
    except OSError:
        return m, 0
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError):
            continue
        if not isinstance(rec, dict):
            continue
        snap = rec.get("snap")
        if isinstance(snap, dict):
            m.restore(snap)
            since = 0
            continue
        r = Reading.from_record(rec)
        n, t = rec.get("n"), rec.get("t")
        if r is None or not isinstance(n, int) or not isinstance(t, (int, float)):
            continue
        if m.apply(n, float(t), r):
            since += 1
    return m, since


def _jnum(v: float) -> str:
    """A value as JSON: a finite float's repr, a non-finite one as the string ``"nan"``/``"inf"``/``"-inf"``
    (JSON has no NaN; :meth:`Reading.from_record` reads the strings back as floats)."""
    return repr(v) if math.isfinite(v) else f'"{v!r}"'


class Recorder:
    """Feeds one attempt's log lines to its :class:`AttemptMetrics` and its file.

    A :class:`~cockpit.core.actions.logscan.LogScan` calls :meth:`line` for every log line
    (numbered from the log's start) and :meth:`batch_done` after each read.  Readings are applied
    to the series together (:meth:`AttemptMetrics.apply_many`), every :data:`APPLY_EVERY` and when
    the read is done."""

    def __init__(self, store: MetricsStore, metrics: AttemptMetrics, since: int) -> None:
        self.store, self.metrics = store, metrics
        self.parser = store.parser()
        self.path = metrics_path(store.journal_dir, metrics.attempt)
        self._pending: list[bytes] = []
        #: this read's readings, applied together when it is done (:meth:`batch_done`)
        self._readings: list[tuple[int, float, Reading]] = []
        #: the last line applied or waiting to be
        self._seen = metrics.lines
        self._since = since
        self._t: float | None = None
        self._json_names: dict[str, str] = {}
        #: names :meth:`MetricsStore.name_ok` passed (a reading of only these is kept as it is)
        self._ok: set[str] = set()
        #: why the file could not be written last time (None when it could)
        self.error: str | None = None

    def line(self, line_no: int, text: str) -> None:
        if line_no <= self._seen or line_no <= self.metrics.lines:
            return
        r = self.parser.parse(text)
        if r is None:
            return
        if not self._ok.issuperset(r.values):
            ok = self.store.name_ok
            r.values = {k: v for k, v in r.values.items() if ok(k)}
            self._ok.update(r.values)
        if self._t is None:
            self._t = round(time.time(), 3)
        self._readings.append((line_no, self._t, r))
        self._seen = line_no
        if len(self._readings) >= APPLY_EVERY:
            self._apply()

    def _apply(self) -> None:
        items, self._readings = self._readings, []
        for ok, (n, t, r) in zip(self.metrics.apply_many(items), items, strict=True):
            if ok:
                self._pending.append(self._record(n, t, r))

    def _record(self, n: int, t: float, r: Reading) -> bytes:
        """The reading's line in the file (:meth:`Reading.to_record`, written by hand: a finite
        float's repr is JSON, and each name is encoded once)."""
        names, finite = self._json_names, math.isfinite
        parts = []
        for k, v in r.values.items():
            name = names.get(k)
            if name is None:
                name = names[k] = json.dumps(k)
            parts.append(f"{name}:{v!r}" if finite(v) else f'{name}:"{v!r}"')  # JSON has no NaN (see _jnum)
        vals = ",".join(parts)
        s = f'{{"n":{n},"t":{t!r},"v":{{{vals}}}'
        if r.step is not None:
            s += f',"s":{r.step!r}'
        if r.total is not None:
            s += f',"tot":{r.total}'
        if r.bar is not None:
            s += f',"b":[{r.bar[0]},{r.bar[1]},{"null" if r.bar[2] is None else r.bar[2]}]'
        return (s + "}\n").encode()

    def batch_done(self) -> None:
        """One read of the log is done: its readings are applied, and written in one go."""
        self._t = None
        if self._readings:
            self._apply()
        if not self._pending:
            return
        self._since += len(self._pending)
        if self._since >= self.store.cap:
            self._rewrite()
            return
        data, self._pending = b"".join(self._pending), []
        try:
            fd, _ = open_append(self.path)
            try:
                write_line(fd, data)
            finally:
                os.close(fd)
            self.error = None
        except OSError as e:  # a full disk: the series stays in memory; the next rewrite tries again
            self._say(e)

    def _rewrite(self) -> None:
        self._pending = []
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            private_dir(self.path.parent, self.store.journal_dir)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            try:
                os.fchmod(fd, 0o600)
                os.write(fd, json.dumps({"snap": self.metrics.snapshot()}, separators=(",", ":")).encode() + b"\n")
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
            self._since = 0
            self.error = None
        except OSError as e:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            self._say(e)

    def _say(self, e: OSError) -> None:
        msg = f"cannot write the metrics {self.path}: {e.strerror or e}"
        if msg != self.error:
            log.warning("%s", msg)
        self.error = msg


class MetricsStore:
    """The metrics of every attempt of one journal: recorders for the live ones, files for the rest.

    ``cfg``: the config whose ``[metrics]`` section is read each time a recorder starts (a live
    reload applies to the next attempt)."""

    def __init__(self, journal_dir: str | os.PathLike[str], cfg: Config | None = None, redactor: Redactor | None = None) -> None:
        self.journal_dir = Path(journal_dir)
        self.cfg = cfg
        self.redactor = redactor if redactor is not None else Redactor()
        self._recorders: OrderedDict[int, Recorder] = OrderedDict()
        self._loaded: dict[int, tuple[tuple[int, int], AttemptMetrics]] = {}
        self._names: dict[str, bool] = {}

    @property
    def cap(self) -> int:
        return self.cfg.metrics.max_points if self.cfg is not None else DEFAULT_CAP

    @property
    def total_steps(self) -> int:
        return self.cfg.metrics.total_steps if self.cfg is not None else 0

    def parser(self) -> MetricParser:
        m = self.cfg.metrics if self.cfg is not None else None
        return MetricParser(m.pattern if m else "", m.builtin if m else True)

    def name_ok(self, name: str) -> bool:
        ok = self._names.get(name)
        if ok is None:
            ok = self._names[name] = len(self._names) < 4096 and self.redactor.text(name) == name
        return ok

    def recorder(self, attempt: int) -> Recorder:
        """The recorder of ``attempt`` (its file replayed first, so a restart goes on where it was)."""
        rec = self._recorders.get(attempt)
        if rec is None:
            m, since = load_attempt(metrics_path(self.journal_dir, attempt), attempt, self.cap)
            rec = self._recorders[attempt] = Recorder(self, m, since)
            while len(self._recorders) > KEEP:
                self._recorders.popitem(last=False)
        else:
            self._recorders.move_to_end(attempt)
        return rec

    def get(self, attempt: int) -> AttemptMetrics | None:
        """``attempt``'s metrics: live from its recorder here, else read from its file (again only
        when the file changed: another cockpit may be recording it); None when it has none."""
        rec = self._recorders.get(attempt)
        if rec is not None:
            return rec.metrics if rec.metrics.series or rec.metrics.lines else None
        path = metrics_path(self.journal_dir, attempt)
        try:
            st = path.stat()
        except OSError:
            self._loaded.pop(attempt, None)
            return None
        key = (st.st_size, st.st_mtime_ns)
        hit = self._loaded.get(attempt)
        if hit is not None and hit[0] == key:
            return hit[1]
        m, _ = load_attempt(path, attempt, self.cap)
        self._loaded[attempt] = (key, m)
        if len(self._loaded) > 4 * KEEP:
            self._loaded.pop(next(iter(self._loaded)))
        return m

    def attempts(self) -> list[int]:
        """Attempts that have a metrics file, in order."""
        d = self.journal_dir / "metrics"
        ids: set[int] = set(self._recorders)
        with contextlib.suppress(OSError):
            for p in d.iterdir():
                name = p.name
                if name.startswith("attempt-") and name.endswith(".jsonl") and name[8:-6].isdigit():
                    ids.add(int(name[8:-6]))
        return sorted(ids)

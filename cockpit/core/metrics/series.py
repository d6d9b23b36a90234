"""One attempt's metrics in memory: a bounded series per metric, the step, the rate and the ETA.

:class:`Series` keeps at most ``cap`` points of one metric.  Readings fall into buckets of
``stride`` readings; a bucket keeps its newest reading (so the curve always ends at the last one)
and, when the extreme (the lowest, or the highest for a ``max`` metric) is one of its readings, that
one too.  Past the cap every two kept points become one (the extreme, else the later) and
``stride`` doubles, so old and new parts of the curve keep the same resolution; the first point
always stays.  ``last``, ``best`` and ``count`` are exact whatever was thinned.

:class:`AttemptMetrics` turns :class:`~.parse.Reading`\\s into points: the step (x) of a reading is
the step it names; else a progress bar's (a Lightning bar's ``epoch × total + n``; a bar that
starts again with the same total goes on from where the last one ended); else the last step seen
(an HF dict line is logged at the step its bar shows); else its ordinal (the Nth reading).  A bar
with a smaller total than the training bar (an evaluation) is left out.  Readings arrive in
*batches* (one read of the log); the step at the end of each batch and the time of the read make
the clock behind the steps per second, so a backlog read at once does not count as one fast step.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any

from .parse import Reading, goal

__all__ = ["Series", "AttemptMetrics", "DEFAULT_CAP", "MAX_METRICS"]

#: points kept per metric
DEFAULT_CAP = 2000
#: metrics kept per attempt (a job printing hundreds of names keeps its first ones)
MAX_METRICS = 24
#: the window the live steps per second are measured over, seconds
RATE_WINDOW = 60.0

Point = tuple[float, float]


class Series:
    """At most ``cap`` points of one metric (see the module doc)."""

    def __init__(self, name: str, cap: int = DEFAULT_CAP) -> None:
        self.name, self.cap = name, max(4, cap)
        self.goal = goal(name)
        self.xs: list[float] = []
        self.ys: list[float] = []
        self.stride = 1
        #: readings the last kept point stands for
        self.fill = 0
        self.count = 0
        self.first: Point | None = None
        self.last: Point | None = None
        #: the extreme kept through thinning: the best for a max metric, else the lowest
        self.extreme: Point | None = None
        #: where the open bucket's points start in ``xs``, and whether the extreme is one of them
        self._start = 0
        self._ext_here = False

    @property
    def best(self) -> Point | None:
        """The best point (None for a metric without a better, such as a learning rate)."""
        return self.extreme if self.goal is not None else None

    def _beats(self, y: float) -> bool:
        if self.extreme is None:
            return True
        return y > self.extreme[1] if self.goal == "max" else y < self.extreme[1]

    def add(self, x: float, y: float) -> None:
        self.count += 1
        pt = (x, y)
        if self.first is None:
            self.first = pt
        self.last = pt
        ext = self.extreme
        new_extreme = ext is None or (y > ext[1] if self.goal == "max" else y < ext[1])
        if new_extreme:
            self.extreme = ext = pt
        xs, ys = self.xs, self.ys
        if not xs or self.fill >= self.stride:  # a new bucket (the first point is one of its own)
            self._start = len(xs)
            xs.append(x)
            ys.append(y)
            self.fill = self.stride if len(xs) == 1 else 1
            self._ext_here = new_extreme and len(xs) > 1
        else:  # the open bucket keeps its newest reading, and its extreme when that is another one
            self.fill += 1
            start = self._start
            if self._ext_here and not new_extreme and ext is not None:
                xs[start:] = (ext[0], x)
                ys[start:] = (ext[1], y)
            else:
                xs[start:] = (x,)
                ys[start:] = (y,)
                self._ext_here = self._ext_here or new_extreme
        if len(xs) > self.cap:
            self._halve()

    def add_many(self, xs: list[float], ys: list[float]) -> None:
        """:meth:`add` of each point in order, to the same state: the points an open bucket takes
        are judged together (the bucket keeps its newest and the extreme: a ``min``/``max`` in C)."""
        i, n = 0, len(xs)
        while i < n:
            k = min(self.stride - self.fill, n - i)
            if not self.xs or k <= 1 or (len(self.xs) - self._start == 1 and len(self.xs) >= self.cap):
                self.add(xs[i], ys[i])  # a new bucket, one point, or a point that may make a halving
                i += 1
                continue
            self._fill(xs, ys, i, i + k)
            i += k

    def _fill(self, xs: list[float], ys: list[float], a: int, b: int) -> None:
        """Points ``a`` to ``b`` into the open bucket, which has room for them all."""
        ext = self.extreme
        assert ext is not None  # an open bucket holds a point
        seg = ys[a:b]
        best = max(seg) if self.goal == "max" else min(seg)
        beats = best > ext[1] if self.goal == "max" else best < ext[1]
        last = b - 1
        x, y = xs[last], ys[last]
        self.count += b - a
        self.fill += b - a
        self.last = (x, y)
        new_last = False
        if beats:  # the first point with the best value is the new extreme (an equal one is no better)
            j = a + seg.index(best)
            self.extreme = ext = (xs[j], ys[j])
            new_last = j == last
            self._ext_here = True
        start = self._start
        if self._ext_here and not new_last:
            self.xs[start:] = (ext[0], x)
            self.ys[start:] = (ext[1], y)
        else:
            self.xs[start:] = (x,)
            self.ys[start:] = (y,)

    def _halve(self) -> None:
        """Every two kept points of the closed buckets become one (the extreme, else the later)."""
        xs, ys, start = self.xs, self.ys, self._start
        keep_x, keep_y = [xs[0]], [ys[0]]
        for i in range(1, start, 2):
            j = i + 1 if i + 1 < start else i
            pick = i if (xs[i], ys[i]) == self.extreme else j
            keep_x.append(xs[pick])
            keep_y.append(ys[pick])
        self._start = len(keep_x)
        self.xs, self.ys = keep_x + xs[start:], keep_y + ys[start:]
        self.stride *= 2

    def to_dict(self) -> dict[str, Any]:
        return {"xs": self.xs, "ys": self.ys, "stride": self.stride, "fill": self.fill, "count": self.count,
                "first": self.first, "last": self.last, "extreme": self.extreme, "start": self._start, "ext_here": self._ext_here}

    @classmethod
    def from_dict(cls, name: str, d: dict[str, Any], cap: int = DEFAULT_CAP) -> Series:
        s = cls(name, cap)
        xs, ys = d.get("xs"), d.get("ys")
        if isinstance(xs, list) and isinstance(ys, list) and len(xs) == len(ys):
            pts = [(float(x), float(y)) for x, y in zip(xs, ys, strict=True) if _num(x) and _num(y)]
            s.xs, s.ys = [p[0] for p in pts], [p[1] for p in pts]
        s.stride = max(1, int(d.get("stride") or 1))
        s.fill = int(d.get("fill") or 0)
        s.count = int(d.get("count") or len(s.xs))
        s.first, s.last, s.extreme = _pt(d.get("first")), _pt(d.get("last")), _pt(d.get("extreme"))
        start = d.get("start")
        s._start = start if isinstance(start, int) and 0 <= start <= len(s.xs) else max(0, len(s.xs) - 1)
        s._ext_here = bool(d.get("ext_here"))
        return s


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _pt(v: Any) -> Point | None:
    if isinstance(v, (list, tuple)) and len(v) == 2 and _num(v[0]) and _num(v[1]):
        return (float(v[0]), float(v[1]))
    return None


@dataclass
class _Clock:
    """Where the steps were at the end of each batch, and when."""

    recent: deque[Point]
    first: Point | None = None
    last: Point | None = None

    def saw(self, t: float, x: float) -> None:
        if self.recent and self.recent[-1][0] == t:
            self.recent[-1] = (t, x)
        else:
            self.recent.append((t, x))
        if self.first is None or self.first[0] == t:
            self.first = (t, x)
        self.last = (t, x)


class AttemptMetrics:
    """Every metric of one attempt (see the module doc).  ``lines``: the last log line number
    applied, so a reader that reads the log again from its start adds nothing twice."""

    def __init__(self, attempt: int, cap: int = DEFAULT_CAP) -> None:
        self.attempt, self.cap = attempt, cap
        self.series: dict[str, Series] = {}
        self.lines = 0
        self.readings = 0
        self.dropped: set[str] = set()
        self.step_known = False
        self.last_step: float | None = None
        self.ordinal = 0
        self.main_total = 0
        self.bar_n = -1
        self.bar_total = 0
        self.bar_offset = 0
        #: ``(done, total)``: the latest progress a line gave (a bar, or ``step 120/1000``)
        self.progress: tuple[float, int] | None = None
        self.clock = _Clock(deque(maxlen=64))
        #: the first non-finite value of each metric: ``{name: {"value": "nan", "step": x, "line": n}}``
        #: (kept out of the series: a plot or a best has no place for NaN)
        self.nonfinite: dict[str, dict[str, Any]] = {}
        #: bumped on every change (front ends redraw only when it moved)
        self.version = 0

    # -- applying readings ---------------------------------------------------------------------
    def apply(self, line_no: int, t: float, r: Reading) -> bool:
        """Apply one reading of log line ``line_no`` read at ``t``; False when it was already applied."""
        return self.apply_many([(line_no, t, r)])[0]

    def apply_many(self, items: list[tuple[int, float, Reading]]) -> list[bool]:
        """:meth:`apply` of each ``(line_no, t, reading)`` in order, to the same state (each series
        takes its new points at once, :meth:`Series.add_many`); whether each one was applied."""
        done: list[bool] = []
        adds: dict[str, tuple[list[float], list[float]]] = {}
        series, finite = self.series, math.isfinite
        seen: tuple[float, float] | None = None  # the clock's last step at one time (the others are replaced)
        for line_no, t, r in items:
            if line_no <= self.lines:
                done.append(False)
                continue
            done.append(True)
            self.lines = line_no
            values = r.values if r.bar is None else dict(r.values)  # only a bar's reading loses values here
            x = self._step_of(r, values)
            if x is None:
                if not values:
                    continue
                if self.step_known and self.last_step is not None:
                    x = self.last_step
                else:
                    self.ordinal += 1
                    x = float(self.ordinal)
            else:
                self.step_known = True
                self.last_step = x
                if seen is not None and seen[0] != t:
                    self.clock.saw(*seen)
                seen = (t, x)
            self.readings += 1
            for name, v in values.items():
                if not finite(v):  # a plot has no place for it: named apart (the run diverged there)
                    self.nonfinite.setdefault(name, {"value": repr(v), "step": x, "line": line_no})
                    continue
                pend = adds.get(name)
                if pend is None:
                    if name not in series:
                        if len(series) >= MAX_METRICS:
                            self.dropped.add(name)
                            continue
                        series[name] = Series(name, self.cap)
                    pend = adds[name] = ([], [])
                pend[0].append(x)
                pend[1].append(v)
            self.version += 1
        if seen is not None:
            self.clock.saw(*seen)
        for name, (xs, ys) in adds.items():
            series[name].add_many(xs, ys)
        return done

    def _step_of(self, r: Reading, values: dict[str, float]) -> float | None:
        if r.total is not None and r.step is not None:
            self.progress = (r.step, r.total)
        if r.bar is not None:
            n, total, epoch = r.bar
            if total < self.main_total and epoch is None:  # an evaluation's bar: not a training step
                for k in [k for k in values if k.endswith("/s")]:
                    del values[k]
                return r.step
            self.main_total = max(self.main_total, total)
            if epoch is not None:
                bx = float(epoch * total + n)
            else:
                if total == self.bar_total and n < self.bar_n:  # the same bar again: a new epoch
                    self.bar_offset += self.bar_total
                bx = float(self.bar_offset + n)
            self.bar_n, self.bar_total = n, total
            self.progress = (float(n), total)
            return r.step if r.step is not None else bx
        return r.step

    # -- reading ---------------------------------------------------------------------------------
    def names(self) -> list[str]:
        """Metric names, the loss-like first (what a front end shows first), then as they came."""
        names = list(self.series)
        return sorted(names, key=lambda n: (0 if n.lower() == "loss" else 1 if "loss" in n.lower() else 2, names.index(n)))

    def rate(self, now: float | None = None) -> float | None:
        """Steps per second over the last minute of batches (None with under two batches)."""
        rec = list(self.clock.recent)
        if len(rec) < 2:
            return None
        t_last = rec[-1][0]
        win = [p for p in rec if p[0] >= t_last - RATE_WINDOW]
        if len(win) < 2:
            win = rec[-2:]
        dt, dx = win[-1][0] - win[0][0], win[-1][1] - win[0][1]
        return dx / dt if dt > 0 and dx > 0 else None

    def mean_rate(self) -> float | None:
        """Steps per second from the end of the first batch to the last one (the history's rate)."""
        a, b = self.clock.first, self.clock.last
        if a is None or b is None or b[0] <= a[0] or b[1] <= a[1]:
            return None
        return (b[1] - a[1]) / (b[0] - a[0])

    def total(self, configured: int = 0) -> int | None:
        """The run's total steps: ``[metrics] total_steps``, else the one the log gave."""
        if configured > 0:
            return configured
        return self.progress[1] if self.progress is not None else None

    def eta(self, configured: int = 0) -> float | None:
        """Seconds to the total at the current rate (None when either is unknown)."""
        rate = self.rate()
        if rate is None:
            return None
        if configured > 0:
            done = self.last_step
            total: float = configured
        elif self.progress is not None:
            done, total = self.progress
        else:
            return None
        if done is None or done > total:
            return None
        return (total - done) / rate

    def last_seen(self) -> float | None:
        """When the last step was read (seconds since the epoch)."""
        return self.clock.last[0] if self.clock.last is not None else None

    # -- persistence -----------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        return {"attempt": self.attempt, "lines": self.lines, "readings": self.readings, "step_known": self.step_known,
                "last_step": self.last_step, "ordinal": self.ordinal, "main_total": self.main_total,
                "bar": [self.bar_n, self.bar_total, self.bar_offset], "progress": list(self.progress) if self.progress else None,
                "clock": {"recent": [list(p) for p in self.clock.recent], "first": self.clock.first, "last": self.clock.last},
                "dropped": sorted(self.dropped), "nonfinite": self.nonfinite, "series": {k: s.to_dict() for k, s in self.series.items()}}

    def restore(self, d: dict[str, Any]) -> None:
        self.lines = int(d.get("lines") or 0)
        self.readings = int(d.get("readings") or 0)
        self.step_known = bool(d.get("step_known"))
        ls = d.get("last_step")
        self.last_step = float(ls) if isinstance(ls, (int, float)) and _num(ls) else None
        self.ordinal = int(d.get("ordinal") or 0)
        self.main_total = int(d.get("main_total") or 0)
        bar = d.get("bar")
        if isinstance(bar, list) and len(bar) == 3 and all(isinstance(b, int) for b in bar):
            self.bar_n, self.bar_total, self.bar_offset = bar
        pr = d.get("progress")
        self.progress = (float(pr[0]), int(pr[1])) if isinstance(pr, list) and len(pr) == 2 and _num(pr[0]) and _num(pr[1]) else None
        clock: dict[str, Any] = d["clock"] if isinstance(d.get("clock"), dict) else {}
        self.clock = _Clock(deque((p for p in (_pt(x) for x in clock.get("recent") or []) if p is not None), maxlen=64),
                            _pt(clock.get("first")), _pt(clock.get("last")))
        self.dropped = {str(x) for x in d.get("dropped") or []}
        nf = d.get("nonfinite")
        self.nonfinite = {str(k): dict(v) for k, v in nf.items() if isinstance(v, dict)} if isinstance(nf, dict) else {}
        series: dict[str, Any] = d["series"] if isinstance(d.get("series"), dict) else {}
        self.series = {str(k): Series.from_dict(str(k), v, self.cap) for k, v in series.items() if isinstance(v, dict)}
        self.version += 1

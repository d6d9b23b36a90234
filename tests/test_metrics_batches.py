"""A read's readings applied together (AttemptMetrics.apply_many, Series.add_many) give the state
that applying them one by one gives: the thinned points, the extremes, the clock, NaNs, the cap."""

from __future__ import annotations

import math
import random

from cockpit.core.metrics.parse import Reading
from cockpit.core.metrics.series import MAX_METRICS, AttemptMetrics, Series


def test_points_added_together_thin_as_points_added_one_by_one() -> None:
    rng = random.Random(3)
    for trial in range(300):
        name = rng.choice(["loss", "acc", "lr"])
        cap = rng.choice([4, 5, 7, 16, 50, 2000])
        one, many = Series(name, cap), Series(name, cap)
        x = 0.0
        for _ in range(rng.randint(1, 25)):
            xs, ys = [], []
            for _ in range(rng.choice([0, 1, 2, 3, 10, 100, 700])):
                x += 1
                xs.append(x)
                ys.append(rng.choice([rng.random(), float(rng.randint(0, 3)), 1.0]))
            for p in zip(xs, ys, strict=True):
                one.add(*p)
            many.add_many(xs, ys)
            assert many.to_dict() == one.to_dict(), (trial, name, cap)
    assert many.stride > 1  # the last series was thinned: the buckets were filled together


def _readings(rng: random.Random, n: int) -> list[tuple[int, float, Reading]]:
    out: list[tuple[int, float, Reading]] = []
    t, step, bar = 1000.0, 0, 0
    for i in range(1, n + 1):
        if rng.random() < 0.05:
            t += 0.5  # a new read
        kind = rng.random()
        if kind < 0.6:
            step += 1
            r = Reading({"loss": rng.random(), "lr": 3e-4, "tok/s": float(rng.randint(1, 9))}, float(step))
        elif kind < 0.7:
            r = Reading({"loss": math.nan if rng.random() < 0.5 else math.inf})
        elif kind < 0.8:
            bar = (bar + 1) % 50
            r = Reading({"it/s": 4.0}, bar=(bar, 50 if rng.random() < 0.9 else 10, None))
        elif kind < 0.9:
            r = Reading({f"m{rng.randint(0, MAX_METRICS + 5)}": 1.0})  # more names than are kept
        else:
            r = Reading({}, float(step), 1000)
        out.append((i if rng.random() < 0.97 else max(1, i - 3), t, r))  # now and then a line applied already
    return out


def test_readings_applied_together_as_one_by_one() -> None:
    rng = random.Random(11)
    for _ in range(20):
        items = _readings(rng, rng.choice([10, 300, 3000]))
        one, many = AttemptMetrics(1, cap=50), AttemptMetrics(1, cap=50)
        done_one = [one.apply(n, t, Reading(dict(r.values), r.step, r.total, r.bar)) for n, t, r in items]
        done_many: list[bool] = []
        for a in range(0, len(items), 257):  # reads of 257 readings
            chunk = [(n, t, Reading(dict(r.values), r.step, r.total, r.bar)) for n, t, r in items[a:a + 257]]
            done_many += many.apply_many(chunk)
        assert done_many == done_one
        a, b = one.snapshot(), many.snapshot()
        assert repr(b) == repr(a)  # (NaN-safe)
        assert many.readings == one.readings and many.dropped == one.dropped and many.version == one.version

"""The log's pace while lines flow counts from one poll's start to the next (cockpit.ui.pacing)."""

from __future__ import annotations

from cockpit.ui.pacing import Pacer


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_a_read_s_own_time_is_not_added_to_the_log_pace() -> None:
    clock = Clock()
    p = Pacer(lambda: 2.0, clock=clock)
    first = p.log_wait(True)  # no poll timed yet: the whole pace
    assert first == 0.1
    clock.t += first + 0.06  # the wait, then a read of 60 ms
    assert abs(p.log_wait(True) - 0.04) < 1e-9  # what is left of the pace: one poll per 0.1 s
    clock.t += 0.04 + 0.25  # a read slower than the pace: a short breath, not a whole pace more
    assert p.log_wait(True) == p.log_min_s


def test_quiet_log_waits_are_not_shortened_by_the_read() -> None:
    clock = Clock()
    p = Pacer(lambda: 2.0, clock=clock)
    p.log_wait(True)
    clock.t += 0.1 + 0.08
    assert p.log_wait(False) == 0.5  # quiet: the usual half second, whatever the read took
    clock.t += 0.5 + 0.03
    assert abs(p.log_wait(True) - 0.07) < 1e-9  # lines again: the pace from this poll's start

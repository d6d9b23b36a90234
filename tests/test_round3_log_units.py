"""Log reading without the lab: progress in carriage-return segments and in the unfinished last
line, non-finite metric values kept (and a required one turning NaN found with its step and line),
a log line's own timestamp, a late reader's backlog dated by it (never by the file's mtime), and the
console capture judged like the log."""

from __future__ import annotations

import calendar
import json
import math
import re

import pytest

from cockpit.core.actions.backlog import date_backlog
from cockpit.core.actions.jobstate import JobState, LogScan
from cockpit.core.actions.logline import line_time, split_lines, tz_seconds
from cockpit.core.actions.nonfinite import NonFiniteWatch, required, running_min
from cockpit.core.actions.stall import ProgressClock, detect_stall, stall_unknown
from cockpit.core.metrics import MetricParser, MetricsStore, load_attempt, metrics_path
from cockpit.core.probes.signatures import Classifier

TQDM = [f"\r{p:3d}%|{'#' * (p // 10):<10}| {p}/100 [00:0{p // 20}<00:05, 19.80it/s, loss={1 / (p + 1):.3f}]" for p in range(0, 100, 10)]


# --------------------------------------------------------------------------- carriage returns
def test_each_carriage_return_segment_is_a_line_and_chunking_does_not_change_them():
    data = ("epoch 1 start\n" + "".join(TQDM) + "\r\ndone\r\n").encode()
    whole, rest = split_lines(b"", data)
    assert rest == b""
    assert [x.decode() for x in whole] == ["epoch 1 start", *[t[1:] for t in TQDM], "done"]
    for cut in range(1, len(data)):  # a \r\n cut in two is still one line end, wherever the read stopped
        a, rest = split_lines(b"", data[:cut])
        b, rest = split_lines(rest, data[cut:])
        assert a + b == whole and rest == b"", cut


def test_a_traceback_printed_on_a_bars_line_starts_a_line_however_the_reads_fell():
    data = ("".join(TQDM[:3]) + "Traceback (most recent call last):\n  File \"t.py\", line 3\nValueError: x\n").encode()
    whole, rest = split_lines(b"", data)
    assert rest == b"" and [x.decode() for x in whole] == [*[t[1:] for t in TQDM[:3]], "Traceback (most recent call last):",
                                                           '  File "t.py", line 3', "ValueError: x"], whole
    for cut in range(1, len(data)):
        a, rest = split_lines(b"", data[:cut])
        b, rest = split_lines(rest, data[cut:])
        assert a + b == whole and rest == b"", cut
    scan = LogScan(re.compile(r"it/s"))
    for cut in (len("".join(TQDM[:3])), len(data)):  # the bar peeked while unfinished, then the traceback after it
        scan.feed(data[:cut])
        data = data[cut:]
    assert scan.last_progress is not None and scan.last_progress.endswith("loss=0.048]"), scan.last_progress


def test_a_bar_without_a_newline_is_progress_as_it_grows_and_counted_once():
    scan = LogScan(re.compile(r"it/s"))
    scan.feed(TQDM[0].encode())  # one redraw, no newline, 100 bytes: before, nothing was looked at under 16 KiB
    assert scan.progress_count == 1 and scan.progress_line is not None and "0/100" in scan.progress_line
    assert scan.clock.count == 0 and scan.clock._pending == 1  # dated when the read is done (tick)
    for t in TQDM[1:]:
        scan.feed(t.encode())
    assert scan.progress_count == len(TQDM), scan.progress_count  # each redraw once, not again when it ends
    assert scan.last_progress is not None and "90/100" in scan.last_progress
    assert scan.lines == len(TQDM) - 1  # the redraw being drawn is not a line yet
    scan.flush()
    assert scan.lines == len(TQDM) and scan.progress_count == len(TQDM)


def test_carriage_return_segments_are_lines_for_the_metrics():
    watch = NonFiniteWatch(("loss",))
    scan = LogScan(re.compile(r"it/s"), nonfinite=watch)
    bar = "".join(TQDM[:3]) + "\r 30%|###       | 30/100 [00:01<00:05, 19.80it/s, loss=nan]" + TQDM[4]
    scan.feed(bar.encode())
    assert watch.first is not None and watch.first.line_no == 4 and watch.first.value == "nan"
    assert "30/100" in watch.first.line


# --------------------------------------------------------------------------- non-finite values
@pytest.mark.parametrize("word,value", [("nan", math.nan), ("NaN", math.nan), ("inf", math.inf), ("-inf", -math.inf),
                                        ("Infinity", math.inf), ("-Infinity", -math.inf)])
def test_non_finite_values_are_kept_as_such(word, value):
    p = MetricParser()
    for line in (f"step 10 loss {word} grad_norm {word}", f"{{'loss': {word}, 'step': 10}}", f"step=10 | loss={word}"):
        r = p.parse(line)
        assert r is not None and r.step == 10, line
        v = r.values["loss"]
        assert (math.isnan(v) if math.isnan(value) else v == value), (line, v)


def test_a_non_finite_step_is_no_step_and_a_word_starting_with_inf_is_no_value():
    p = MetricParser()
    r = p.parse("step nan loss 2.5")
    assert r is not None and r.step is None and r.values == {"loss": 2.5}
    r = p.parse("step 3 loss 1.5 info 2")
    assert r is not None and r.values == {"loss": 1.5, "info": 2.0}


def test_non_finite_values_survive_the_store_and_stay_out_of_the_plotted_series(tmp_path):
    store = MetricsStore(tmp_path)
    rec = store.recorder(1)
    for i, loss in enumerate(["2.5", "2.0", "nan", "inf"], start=1):
        rec.line(i, f"step {i} loss {loss} grad_norm 1.0")
    rec.batch_done()
    lines = [json.loads(x) for x in metrics_path(tmp_path, 1).read_text().splitlines()]  # strict JSON: no bare NaN
    assert [x["v"]["loss"] for x in lines] == [2.5, 2.0, "nan", "inf"]
    m, _ = load_attempt(metrics_path(tmp_path, 1), 1)
    assert m.series["loss"].ys == [2.5, 2.0] and m.series["grad_norm"].ys == [1.0] * 4
    assert m.nonfinite["loss"] == {"value": "nan", "step": 3.0, "line": 3}
    assert all(math.isfinite(y) for s in m.series.values() for _, y in zip(s.xs, s.ys, strict=True))
    snap = json.loads(json.dumps(m.snapshot(), allow_nan=False))
    m2 = load_attempt(tmp_path / "missing", 1)[0]
    m2.restore(snap)
    assert m2.nonfinite == m.nonfinite


def test_the_first_required_non_finite_value_names_its_metric_step_and_line():
    assert required("train/loss", ("loss",)) and required("eval_loss", ("loss",)) and not required("lossy", ("loss",))
    watch = NonFiniteWatch(("loss",))
    scan = LogScan(re.compile(r"^step"), nonfinite=watch)
    scan.feed(b"step 9 loss 2.1 grad_norm 0.9\nstep 10 loss 1.9 grad_norm nan\nstep 11 loss nan grad_norm nan\n"
              b"step 12 loss nan grad_norm nan\n")
    d = watch.first
    assert d is not None and (d.name, d.value, d.step, d.line_no) == ("loss", "nan", 11.0, 3)
    assert watch.count == 2
    assert d.describe() == "loss turned non-finite (nan) at step 11: line 3: step 11 loss nan grad_norm nan"
    watch = NonFiniteWatch(("loss", "grad_norm"))
    LogScan(None, nonfinite=watch).feed(b"step 10 loss 1.9 grad_norm inf\n")
    assert watch.first is not None and watch.first.name == "grad_norm" and watch.first.value == "inf"


def test_a_best_so_far_value_at_inf_is_none_yet_and_its_nan_still_diverges():
    assert running_min("best_val_loss") and running_min("train/min_loss") and running_min("eval.best_loss")
    assert not running_min("val_loss") and not running_min("minibatch_loss") and not running_min("loss")
    watch = NonFiniteWatch(("loss",))
    scan = LogScan(re.compile(r"^step"), nonfinite=watch)
    scan.feed(b"step 1 loss 2.0 best_val_loss inf\nstep 2 loss 1.0 best_val_loss 1.1\n")
    assert watch.first is None and watch.count == 0
    scan.feed(b"step 3 loss 0.9 best_val_loss nan\nstep 4 loss 0.8 val_loss inf\n")
    d = watch.first
    assert d is not None and (d.name, d.value, d.line_no) == ("best_val_loss", "nan", 3) and watch.count == 2


# --------------------------------------------------------------------------- a line's own time
NOW = float(calendar.timegm((2024, 5, 1, 12, 0, 40, 0, 0, 0)))


@pytest.mark.parametrize("line,tz,expect", [
    ("2024-05-01 12:00:00,123 - INFO - step 5 loss 1.0", 0, NOW - 40),
    ("2024-05-01 14:00:00 INFO step 5", 7200, NOW - 40),  # the target's zone places a naive time
    ("[rank0] 2024-05-01T12:00:00.5Z step 5", None, NOW - 40),
    ("2024-05-01T14:00:00+02:00 step 5", None, NOW - 40),
    ("[12:00:00] step 5", 0, NOW - 40),
    ("[23:59:50] step 5", 0, NOW - (12 * 3600 + 50)),  # later than now today: yesterday's
    ("2024-05-01 12:00:00 step 5", None, None),  # naive, zone unknown: no time
    ("step 5 at 2024-05-01 12:00:00" + " " * 80, 0, NOW - 40),  # near the start: still the line's time
    ("2024-05-01 12:05:00 step 5", 0, None),  # in the future of the target's clock
    ("step 5 loss 1.0", 0, None),
])
def test_a_log_line_says_when_it_was_written(line, tz, expect):
    got = line_time(line, NOW, tz)
    assert got == expect, (line, got, expect)


def test_date_plus_z():
    assert tz_seconds("+0130") == 5400 and tz_seconds("-0500") == -18000 and tz_seconds("UTC") is None


# --------------------------------------------------------------------------- the backlog's date
def _backlog(lines: bytes, *, log_age: float, tz: int | None = 0) -> LogScan:
    scan = LogScan(re.compile(r"step \d+"))
    scan.feed(lines)
    scan.clock.tick()
    st = JobState(log_mtime=NOW - log_age, remote_now=NOW, tz=tz)
    date_backlog(scan.clock, st, True)
    return scan


def test_a_late_reader_dates_the_last_progress_by_its_timestamp_not_the_heartbeat_fresh_mtime():
    import time

    log = b"2024-05-01 12:00:00 INFO step 7 loss 1.0\n2024-05-01 12:00:38 INFO heartbeat\n"
    scan = _backlog(log, log_age=2)  # the heartbeat wrote 2 s ago; the last step was 40 s ago
    now = time.time()
    silent = scan.clock.silent_for(now)
    assert silent is not None and 39 <= silent <= 42 and not scan.clock.undated
    stall = detect_stall(15, scan.clock, now)
    assert stall is not None and "step 7" in stall.describe()


def test_without_timestamps_a_late_reader_cannot_tell_and_follows_one_window():
    import time

    scan = _backlog(b"step 7 loss 1.0\nheartbeat\n", log_age=2)
    now = time.time()
    assert scan.clock.undated
    assert detect_stall(15, scan.clock, now) is None  # not judged from the mtime...
    left = stall_unknown(15, scan.clock, now, launched_at=now - 60)
    assert left is not None and 12 <= left <= 15  # ...but followed for the window
    assert stall_unknown(15, scan.clock, now, launched_at=now - 10) is None  # launched 10 s ago: cannot be stalled yet
    assert stall_unknown(15, scan.clock, now + 16, launched_at=now - 60) is None  # the window is over: judged
    assert detect_stall(15, scan.clock, now + 16) is not None
    scan.feed(b"step 8 loss 0.9\n")  # progress while following: dated as it is read
    scan.clock.tick()
    assert not scan.clock.undated and stall_unknown(15, scan.clock, time.time(), launched_at=now - 60) is None


def test_a_quiet_log_is_a_stall_at_once_even_without_timestamps():
    import time

    scan = _backlog(b"step 7 loss 1.0\n", log_age=100)  # nothing written for 100 s: progress is at least that old
    assert stall_unknown(15, scan.clock, time.time(), launched_at=time.time() - 200) is None
    assert detect_stall(15, scan.clock, time.time()) is not None


def test_progress_clock_dated_on_read_is_not_undated():
    c = ProgressClock()
    c.saw("step 1")
    c.tick(100.0)
    assert not c.undated and c.last_at == 100.0


# --------------------------------------------------------------------------- the console file
def test_console_lines_are_judged_like_the_log_but_are_not_its_lines_for_the_metrics():
    watch = NonFiniteWatch(("loss",))
    scan = LogScan(re.compile(r"^step"), Classifier(), nonfinite=watch)
    scan.feed(b"step 1 loss 2.0\nstep 2 loss 1.9\n")
    scan.feed_console(b"Exception in thread loader-0:\nTraceback (most recent call last):\n"
                      b'  File "/w/r3_console.py", line 9, in load\n    x = table[key]\n')
    scan.feed(b"step 3 loss 1.8\n")
    scan.feed_console(b"KeyError: 'shard-7'\n")
    scan.flush()
    errs = scan.errors()
    assert errs and "KeyError" in errs[0].label, [e.label for e in errs]
    assert scan.dead_threads() == ["loader-0"]
    assert scan.log_lines == 3 and scan.lines == 8


def test_the_history_summary_names_where_a_metric_turned_non_finite(tmp_path):
    from cockpit.core.metrics import summary, summary_line

    store = MetricsStore(tmp_path)
    rec = store.recorder(1)
    for i, loss in enumerate(["2.5", "2.0", "nan", "nan"], start=1):
        rec.line(i, f"step {i} loss {loss}")
    rec.batch_done()
    d = summary(store.get(1))
    assert d is not None and d["nonfinite"] == {"loss": {"value": "nan", "at": 3, "line": 3}}
    assert d["values"]["loss"]["last"] == 2.0  # the plotted series holds the finite values only
    json.dumps(d, allow_nan=False)
    assert summary_line(d).startswith("loss nan from step 3 · loss 2 ")


def test_the_job_probe_reads_the_targets_zone():
    from cockpit.core.actions.job import JobRecord
    from cockpit.core.actions.jobstate import parse_state, state_command

    job = JobRecord(pid=40, pgid=40, log_path="/w/train-1.log", pid_file="/w/p", exit_file="/w/e")
    assert 'echo "tz=$(date +%z)"' in state_command(job, 0)
    out = b"pid=40\nexit=\nsize=0\nnow=105\ntz=-0330\n@@stat\n\n@@log\n"
    st = parse_state(out, job)
    assert st.parsed and st.tz == -(3 * 3600 + 30 * 60) and st.remote_now == 105.0

"""Stall detection's pieces without the lab: the progress clock, the threshold, the layer."""

from __future__ import annotations

from cockpit.core.actions.stall import AUTO_FLOOR_S, ProgressClock, stall_layer, stall_threshold
from cockpit.core.layers import Layer


def test_lines_read_together_are_spread_over_the_time_since_the_last_read():
    c = ProgressClock()
    c.saw("step 1")
    c.tick(100.0)  # the first read dates the last line; no interval yet
    for n in range(2, 6):
        c.saw(f"step {n}")
    c.tick(102.0)  # four steps in 2 s: 0.5 s each, not 2 s and not 0
    assert c.median_interval() == 0.5 and c.count == 5 and c.last_line == "step 5"
    assert c.silent_for(110.0) == 8.0
    c.tick(200.0)  # a read without progress changes nothing
    assert c.last_at == 102.0


def test_the_threshold_auto_fixed_and_off():
    c = ProgressClock()
    assert stall_threshold("auto", c) == AUTO_FLOOR_S  # no rhythm known yet
    c.intervals.extend([20.0] * 5)
    assert stall_threshold("auto", c) == 200.0  # 10x a 20 s step beats the 120 s floor
    assert stall_threshold(30, c) == 30.0
    assert stall_threshold(0, c) is None


def test_the_layer_of_a_stall_follows_the_evidence():
    assert stall_layer([0.0, 0.0], None, "S")[0] is Layer.APP
    assert stall_layer([100.0, 99.0], None, "S")[0] is Layer.GPU
    assert stall_layer(None, "Xid 79 on 0000:3b:00.0: GPU has fallen off the bus", "S")[0] is Layer.GPU
    assert stall_layer(None, None, "D", "nv_wait_for_event")[0] is Layer.GPU
    layer, why = stall_layer(None, None, "D", "nfs_wait_bit_killable")
    assert layer is Layer.PROCESS and "nfs_wait_bit_killable" in why
    assert stall_layer([40.0], None, "S") == (Layer.APP, "")  # busy but not pinned: no claim


def test_a_stopped_process_stalls_in_the_process_layer():
    """A job frozen by SIGSTOP (state T) is not code that waits: its stall names the process layer
    and how it resumes, read from a real stopped process's /proc state."""
    import signal
    import subprocess
    from pathlib import Path

    from cockpit.core.procstat import read_stat
    from tests.lab.util import wait_for

    proc = subprocess.Popen(["sleep", "60"])
    try:
        proc.send_signal(signal.SIGSTOP)
        stat = wait_for(lambda: (s := read_stat(Path(f"/proc/{proc.pid}/stat").read_text())) is not None and s.state == "T" and s, 5)
        layer, why = stall_layer([0.0], None, stat.state)
        assert layer is Layer.PROCESS and "SIGCONT" in why and "state T" in why
        assert stall_layer(None, None, "t")[0] is Layer.PROCESS  # traced by a debugger
    finally:
        proc.kill()
        proc.wait()

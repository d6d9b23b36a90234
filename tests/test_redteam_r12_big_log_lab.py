"""A later cockpit that reads a job whose log is larger than one reading judges it from the whole log.

A trainer wrote more debug lines than one reading takes (64 MiB), then died of a ``RuntimeError`` (its traceback the log's last
lines).  ``cockpit verify`` run by a cockpit that had not followed it read the log's first 64 MiB (a
reader's cap per reading) and judged at once: "process failed at alive: exited with code 1, with no
traceback in the log; its last line: DEBUG shard xxx…", and journalled that fate.  The launching
cockpit's fate follower told the same: the reading that showed the exit status read 64 MiB of the
log and judged, the traceback unread.  A reader's first reading, and a reading that shows the job
exited, now read everything the log held then (the tests make the cap 2 MiB, the log 3 MiB).
The same of a job's console capture (``capture_output = false``): a traceback at the end of a
console over 64 MiB went unread.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.actions import jobstate
from tests.lab import await_for
from tests.lab.runs import fate_of, script_command

pytestmark = pytest.mark.lab

#: the per-call cap made small, so a log just over it (MIB MiB) shows the fault in a second, not 9 s
CAP_MIB, MIB = 2, 3


@pytest.fixture(autouse=True)
def small_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobstate, "READ_PER_CALL", CAP_MIB << 20)


async def launched_then_crashed(lab: Any, first: Any, suffix: str) -> Any:
    """``first`` launches the job; back once its crash is at the end of its log (``suffix``: ``.console``)."""
    assert (v := await first.run_action("launch")).failed_stage is None, v.summary()
    path = first.job.log_path + suffix
    await await_for(lambda: "illegal memory access" in lab.exec_in(200, f"tail -c 300 {path}").stdout, 30, "the crash")
    return first


async def later_verify_names_the_crash(cfg: Any, later: Any) -> None:
    """A cockpit started after the crash (`cockpit verify`) names it, and journals that fate."""
    v = await later.run_action("verify")
    alive = next(s for s in v.stages if s.name == "alive")
    assert "no traceback" not in alive.detail and "illegal memory access" in alive.detail and alive.layer.value != "process", v.summary()
    fate = fate_of(cfg, later.job_attempt)
    assert fate.state == "died" and "illegal memory access" in fate.cause and fate.layer != "process", fate


async def test_a_later_verify_of_a_crash_past_a_large_log_names_the_traceback(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "r12_big_log_crash.py", MIB), "progress_pattern": r"step \d+"},
                     verify={"settle": 0.5})
    await launched_then_crashed(lab, engines(cfg), "")  # the first follows the job: its follower reads the exit too
    await later_verify_names_the_crash(cfg, engines(cfg))


async def test_a_later_verify_of_a_crash_past_a_large_console_names_the_traceback(lab: Any, lab_config: Any, engines: Any) -> None:
    own = f"{lab.workspace(200)}/r12-own-{{attempt}}.log"
    cfg = lab_config(job={"command": script_command(lab, "r12_console_crash.py", own.replace("{attempt}", "1"), MIB), "log": own,
                          "capture_output": False, "progress_pattern": r"step \d+"},
                     verify={"settle": 0.5})
    await launched_then_crashed(lab, engines(cfg), ".console")
    await later_verify_names_the_crash(cfg, engines(cfg))


async def test_a_first_look_behind_a_very_large_log_reads_its_start_and_end_not_all_of_it(
        lab: Any, lab_config: Any, engines: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past :data:`SKIP_OVER_READINGS` readings' worth, the middle is skipped: a later cockpit's
    `status` on a job with a log of tens of GB read all of it over the link before it answered."""
    from cockpit.core.actions.adopt import job_reader

    monkeypatch.setattr(jobstate, "READ_PER_CALL", 1 << 20)
    big = 20  # MiB: over the line (SKIP_OVER_READINGS readings' worth), with the per-call cap at 1 MiB
    cfg = lab_config(job={"command": script_command(lab, "r12_big_log_crash.py", big), "progress_pattern": r"step \d+"},
                     verify={"settle": 0.5})
    first = await launched_then_crashed(lab, engines(cfg), "")
    later = engines(cfg)
    reader = job_reader(later.context(), first.job)
    st = await reader.read()
    assert st.exited and reader.offset == st.log_size > big << 20, (reader.offset, st.log_size)
    assert reader.skipped >= (big - 3) << 20, reader.skipped  # all but the first and the last MiB or so
    assert any("illegal memory access" in ln for ln in reader.scan.tail_lines), reader.scan.tail_lines[-3:]
    assert reader.scan.progress_count >= 3  # the start was read: its progress lines count
    assert not any(ln.startswith("x") for ln in reader.scan.tail_lines)  # no line begun mid-way after the skip
    v = await later.run_action("verify")
    alive = next(s for s in v.stages if s.name == "alive")
    assert "illegal memory access" in alive.detail and alive.layer.value != "process", v.summary()

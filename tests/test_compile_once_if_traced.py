"""The whole-trace read after a job ends starts the filter only when there is a trace to read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cockpit.core.compile import TRACE_GLOB, once_if_traced

FIXTURES = Path(__file__).parent / "fixtures" / "torch_trace"


def sh(cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=30)


def test_no_trace_file_or_an_empty_one_starts_no_filter(tmp_path: Path) -> None:
    missing = tmp_path / "never-made"
    # a Python that cannot start: the filter must not be tried at all
    for d in (tmp_path, missing):
        r = sh(once_if_traced(str(d), python=str(tmp_path / "no-python-here")))
        assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), r
    (tmp_path / TRACE_GLOB.replace("*", "rank_0_0")).write_bytes(b"")
    r = sh(once_if_traced(str(tmp_path), python=str(tmp_path / "no-python-here")))
    assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), r


def test_a_trace_with_bytes_is_filtered_once(tmp_path: Path) -> None:
    recorded = next((FIXTURES / "graph_break").glob(TRACE_GLOB))  # a real torch 2.14 trace
    (tmp_path / recorded.name).write_bytes(recorded.read_bytes())
    (tmp_path / TRACE_GLOB.replace("*", "rank_1_0")).write_bytes(b"")
    # a Python that says it ran, with its arguments: run exactly once, on the directory, --once
    fake = tmp_path / "py"
    fake.write_text(f"#!/bin/sh\necho ran \"$3\" \"$5\" >> {tmp_path / 'runs'}\n")
    fake.chmod(0o755)
    r = sh(once_if_traced(str(tmp_path), python=str(fake)))
    assert r.returncode == 0, r
    assert (tmp_path / "runs").read_text().splitlines() == [f"ran {tmp_path} --once"]
    # and the real filter reads it: the frames and the graph break
    r = sh(once_if_traced(str(tmp_path), python=sys.executable))
    assert r.returncode == 0 and "branchy" in r.stdout and "graph_break" in r.stdout, r

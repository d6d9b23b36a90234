"""torch.compile's structured trace: the parser, the summary and its alerts, and the target-side
filter, on traces recorded from real torch jobs (``tests/fixtures/torch_trace/``, made by
``tests/lab/record_torch_traces.py``).  None of this needs torch; the one test that runs a real
torch job is marked ``torch`` and skips unless torch is importable here or ``COCKPIT_TORCH_PYTHON``
names a Python that has it."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cockpit.core.compile import (
    CAUGHT_UP,
    FILTER_SCRIPT,
    CompileSummary,
    CompileTracker,
    SummaryBuilder,
    TraceParser,
    filter_file,
    filter_text,
    parse_text,
    script_command,
    shell_command,
    summarize,
)
from tests.examples import examples
from tests.lab.util import wait_for

FIXTURES = Path(__file__).parent / "fixtures" / "torch_trace"
CASES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
#: a Python with torch for the one live test: this one, or the one COCKPIT_TORCH_PYTHON names
TORCH_PYTHON = sys.executable if importlib.util.find_spec("torch") is not None else os.environ.get("COCKPIT_TORCH_PYTHON")


def trace_files(case: str) -> list[Path]:
    return sorted((FIXTURES / case).glob("dedicated_log_torch_trace_*.log"))


def parse_case(case: str) -> tuple[CompileSummary, TraceParser]:
    parser = TraceParser()
    events = []
    for path in trace_files(case):
        events += parser.feed(path.read_bytes(), path.name)
        events += parser.close(path.name)
    return summarize(events, parser.malformed), parser


def filtered_summary(lines: list[str]) -> CompileSummary:
    events, parser = parse_text("\n".join(lines) + "\n", "stream")
    assert parser.malformed == 0
    return summarize(events)


def test_fixtures_are_recorded_traces_with_their_torch_version() -> None:
    assert {"recompile_storm", "graph_break", "thread_race", "cache_cold", "cache_warm", "compile_failure", "two_ranks"} <= set(CASES)
    for case in CASES:
        assert trace_files(case), case
        assert (FIXTURES / case / "VERSION").read_text().startswith("torch 2.")
        _, parser = parse_case(case)
        assert parser.malformed == 0 and parser.lines > 10, case


def test_recompile_storm_hits_the_limit_with_the_guard_reasons() -> None:
    s, _ = parse_case("recompile_storm")
    grow = s.frame("grow")
    assert grow is not None and grow.where.endswith("recompile_storm.py:14")
    assert (grow.compiles, grow.recompiles, grow.limit_hit, s.recompile_limit) == (4, 3, True, 4)
    assert "size mismatch at index 0" in grow.recompile_reasons[-1]
    assert grow.guard_count == 8 and grow.total_compile_s >= grow.last_compile_s > 0  # type: ignore[operator]
    assert s.alerts[0].kind == "recompile_limit" and s.alerts[0].frame == grow.key
    assert "recompile_limit" in s.alerts[0].advice and "(4)" in s.alerts[0].message
    assert s.totals["recompiles"] == 3


def test_graph_break_reason_and_the_fullgraph_failure() -> None:
    s, _ = parse_case("graph_break")
    branchy, strict = s.frame("branchy"), s.frame("strict")
    assert branchy is not None and strict is not None
    assert branchy.graph_break_count == 1 and branchy.restarts == 1
    brk = branchy.graph_breaks[0]
    assert "Tensor.item()" in brk.reason and brk.at.endswith("graph_break.py:13")
    assert s.frame("torch_dynamo_resume_in_branchy_at_13") is not None  # the code after the break: a frame of its own
    (fail,) = strict.failures
    assert fail.fail_type == "UserError" and fail.user_frame.endswith("graph_break.py:21")
    kinds = [a.kind for a in s.alerts]
    assert kinds == ["compile_failure", "graph_breaks"]
    assert "fullgraph" in s.alerts[0].advice


def test_two_threads_compiling_are_flagged() -> None:
    s, _ = parse_case("thread_race")
    step = s.frame("step")
    assert step is not None and step.compiles == 2
    assert all(":thread:" in t for t in step.threads)
    (alert,) = [a for a in s.alerts if a.kind in ("threaded_compile", "thread_race")]
    assert alert.kind == "threaded_compile" and "0/0, 0/1" in alert.message and "main thread" in alert.advice


def _glog(clock: str, tid: int, body: dict[str, object]) -> str:
    return f"V1203 {clock} {tid} torch/_dynamo/convert_frame.py:1] {json.dumps(body)}\n"


def test_overlapping_compiles_on_two_threads_are_a_race() -> None:
    """torch 2.2-2.4 write the thread id in the glog prefix and let two threads compile at once."""
    def start(fid: int) -> dict[str, object]:
        return {"dynamo_start": {"stack": [{"line": 1, "name": "f", "filename": 0}]}, "frame_id": fid, "frame_compile_id": 0, "attempt": 0}

    def done(fid: int) -> dict[str, object]:
        return {"compilation_metrics": {"compile_id": f"{fid}/0", "co_name": f"f{fid}", "co_filename": "a.py", "co_firstlineno": 1,
                                        "entire_frame_compile_time_s": 1.0}, "frame_id": fid, "frame_compile_id": 0, "attempt": 0}

    text = (_glog("16:00:00.000000", 111, start(0)) + _glog("16:00:00.500000", 222, start(1))
            + _glog("16:00:01.000000", 111, done(0)) + _glog("16:00:01.500000", 222, done(1)))
    events, _ = parse_text(text, "t.log")
    s = summarize(events)
    assert s.alerts[0].kind == "thread_race" and "2 threads" in s.alerts[0].message
    serial = (_glog("16:00:00.000000", 111, start(0)) + _glog("16:00:01.000000", 111, done(0))
              + _glog("16:00:02.000000", 222, start(1)) + _glog("16:00:03.000000", 222, done(1)))
    assert not [a for a in summarize(parse_text(serial, "t.log")[0]).alerts if a.kind == "thread_race"]


def test_cold_then_warm_inductor_cache() -> None:
    cold, _ = parse_case("cache_cold")
    warm, _ = parse_case("cache_warm")
    assert (cold.cache_state, cold.cache_hit_ratio, cold.cache_hits) == ("cold", 0.0, 0) and cold.cache_misses >= 2
    assert (warm.cache_state, warm.cache_hit_ratio, warm.cache_misses) == ("warm", 1.0, 0)
    assert cold.frames[0].cache["fx_graph"]["miss"] >= 1 and warm.frames[0].cache["fx_graph"]["hit"] == 1
    assert [a.kind for a in cold.alerts] == ["cache_cold"] and warm.alerts == []
    assert cold.frames[0].last_compile_s > warm.frames[0].last_compile_s  # type: ignore[operator]


def test_backend_failure() -> None:
    s, _ = parse_case("compile_failure")
    (fail,) = s.frames[0].failures
    assert fail.fail_type == "BackendCompilerFailed" and "backend refused this graph" in fail.reason
    assert s.alerts[0].kind == "compile_failure" and "backend='eager'" in s.alerts[0].advice
    assert s.torch_version.startswith("2.")


def test_one_trace_file_per_rank() -> None:
    s, _ = parse_case("two_ranks")
    assert s.ranks == [0, 1]
    assert [(f.key, f.function) for f in s.frames] == [("rank0/0", "step"), ("rank1/0", "step")]


@pytest.mark.parametrize("case", CASES)
def test_the_filtered_stream_gives_the_same_summary_and_is_small(case: str) -> None:
    whole, _ = parse_case(case)
    lines = [line for path in trace_files(case) for line in filter_file(str(path))]
    small = filtered_summary(lines)
    a, b = whole.to_dict(), small.to_dict()
    a.pop("events")
    b.pop("events")
    assert a == b
    bytes_in = sum(p.stat().st_size for p in trace_files(case))
    bytes_out = sum(len(line.encode()) + 1 for line in lines)
    assert bytes_out * 5 < bytes_in, (bytes_in, bytes_out)
    for line in lines:
        assert "\n" not in line and "chromium_event" not in line[:120] and '"str":' not in line[:120]
        envelope = json.loads(line.split("] ", 1)[1])
        assert len(envelope["cockpit"].get("payload", "")) <= 2048


def _run_filter(directory: Path, *extra: str, python: str = sys.executable) -> subprocess.Popen[str]:
    argv = script_command(str(directory), once="--once" in extra, interval=0.02)
    return subprocess.Popen([python, *argv[1:]], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("case", ["graph_break", "two_ranks", "cache_cold"])
def test_the_script_as_a_process_equals_the_in_process_filter(case: str) -> None:
    proc = _run_filter(FIXTURES / case, "--once")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    expected = [line for path in trace_files(case) for line in filter_file(str(path))]
    assert out.splitlines() == expected


def test_the_script_reads_big_files_in_chunks() -> None:
    """Read 1000 bytes per file and poll: the same lines (the two ranks' lines interleave)."""
    argv = script_command(str(FIXTURES / "two_ranks"), once=True)
    out = subprocess.run([sys.executable, *argv[1:], "--chunk=1000"], capture_output=True, text=True, timeout=60, check=True).stdout
    expected = [line for path in trace_files("two_ranks") for line in filter_file(str(path))]
    assert sorted(out.splitlines()) == sorted(expected) and out.splitlines() != expected


@pytest.mark.parametrize("version", ["3.6", "3.8"])
def test_the_script_runs_on_an_old_python3(version: str) -> None:
    """Containers ship old interpreters: the script's output is the same under Python 3.6."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [shutil.which(f"python{version}"), *sorted(str(p) for p in pyenv.glob(f"{version}.*/bin/python"))]
    works = [c for c in candidates if c and subprocess.run([c, "-c", "pass"], capture_output=True).returncode == 0]
    if not works:
        pytest.skip(f"no working python{version} here")
    python = works[0]
    proc = _run_filter(FIXTURES / "graph_break", "--once", python=python)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.splitlines() == filter_file(str(trace_files("graph_break")[0]))


def test_the_shell_line_runs_the_filter_and_the_tracker_reads_it() -> None:
    """What a remote would run (``sh -c LINE``), read back with the tracker cut in odd pieces."""
    line = shell_command(str(FIXTURES / "recompile_storm"), once=True, python=sys.executable)
    out = subprocess.run(["sh", "-c", line], capture_output=True, timeout=60, check=True).stdout
    tracker = CompileTracker()
    for i in range(0, len(out), 777):
        tracker.feed(out[i:i + 777], "ssh")
    tracker.close()
    s = tracker.summary()
    assert s.malformed == 0 and s.frame("grow").limit_hit and s.recompile_limit == 4  # type: ignore[union-attr]
    tracker.feed("not a trace line\n", "ssh")
    assert tracker.summary().malformed == 1


def test_the_script_follows_growing_and_new_files(tmp_path: Path) -> None:
    storm = trace_files("recompile_storm")[0].read_bytes()
    other = trace_files("compile_failure")[0]
    first = tmp_path / "dedicated_log_torch_trace_aaaa.log"
    cut = len(storm) // 2 + 7  # mid-line
    first.write_bytes(storm[:cut])
    proc = _run_filter(tmp_path)
    got: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            got.append(line.rstrip("\n"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        # what the file held at the start comes first, then the line saying so: "no compile seen"
        # before it proves nothing (a verify judging a job's start by the trace waits for it)
        wait_for(lambda: CAUGHT_UP in got, timeout=20, message=lambda: f"{len(got)} lines, not caught up")
        before = got[:got.index(CAUGHT_UP)]
        assert len(before) >= 3 and all(json.loads(line.split("] ", 1)[1])["cockpit"]["src"] == first.name for line in before)
        with first.open("ab") as f:
            f.write(storm[cut:])
        shutil.copy(other, tmp_path / "dedicated_log_torch_trace_zzzz.log")
        expected = filter_text(storm, first.name) + filter_text(other.read_bytes(), "dedicated_log_torch_trace_zzzz.log")
        wait_for(lambda: len(got) >= len(expected) + 1, timeout=20, message=lambda: f"{len(got)} of {len(expected)} lines")
        assert got.count(CAUGHT_UP) == 1  # said once, not after every burst
        data = [line for line in got if line != CAUGHT_UP]
        assert sorted(data) == sorted(expected)
        assert summarize(parse_text("\n".join(data) + "\n")[0]).frame("grow").limit_hit  # type: ignore[union-attr]
    finally:
        proc.kill()
        proc.wait()


def test_the_script_says_caught_up_at_once_on_an_empty_directory_and_never_when_reading_once(tmp_path: Path) -> None:
    assert f'CAUGHT_UP = "{CAUGHT_UP}"' in FILTER_SCRIPT  # the script and cockpit spell it alike
    proc = _run_filter(tmp_path)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().rstrip("\n") == CAUGHT_UP
    finally:
        proc.kill()
        proc.wait()
    once = subprocess.run([sys.executable, *script_command(str(tmp_path), once=True)[1:]], capture_output=True, text=True, timeout=60)
    assert once.returncode == 0 and once.stdout == ""


def test_the_script_runs_on_its_own_text() -> None:
    """It is a program of its own: stdlib imports only, no cockpit."""
    imports = {line.split()[1].rstrip(",") for line in FILTER_SCRIPT.splitlines() if line.startswith(("import ", "from "))}
    assert imports <= {"glob", "json", "os", "re", "sys", "time"}, imports
    compile(FILTER_SCRIPT, "filter", "exec")


def test_summary_round_trips_through_its_dict() -> None:
    for case in CASES:
        s, _ = parse_case(case)
        d = s.to_dict()
        text = json.dumps(d, sort_keys=True)
        back = CompileSummary.from_dict(json.loads(text))
        assert back.to_dict() == d, case
        assert back.totals == s.totals and [a.kind for a in back.alerts] == [a.kind for a in s.alerts]
    assert CompileSummary.from_dict({}).to_dict()["totals"]["frames"] == 0
    assert set(d) >= {"schema", "frames", "totals", "alerts", "cache_state", "cache_hits", "cache_misses", "recompile_limit"}


def test_payload_and_line_caps() -> None:
    body = {"artifact": {"name": "recompile_reasons", "encoding": "json"}, "frame_id": 0, "frame_compile_id": 1, "attempt": 0, "has_payload": "x"}
    text = _glog("16:00:00.000000", 1, body) + "\t" + "y" * 50_000 + "\n" + _glog("16:00:01.000000", 1, {"str": ["a.py", 0]})
    parser = TraceParser(payload_cap=1000)
    (event,) = parser.feed(text)
    assert event.payload_cut and len(event.payload) <= 1000
    parser = TraceParser(line_cap=4096)
    assert parser.feed("V" * 10_000) == [] and parser.feed("tail\n" + text) and parser.malformed == 1
    (line,) = filter_text(text.encode())
    assert len(json.loads(line.split("] ", 1)[1])["cockpit"]["payload"]) <= 2048


RAW = trace_files("graph_break")[0].read_bytes()
RANKS = [p.read_bytes() for p in trace_files("two_ranks")]


def _signature(events: list) -> list[tuple[str, str, str, str]]:  # type: ignore[type-arg]
    return [(e.source, e.kind, e.name, e.payload) for e in events]


WHOLE = _signature(parse_text(RAW, "a.log")[0])


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(RAW)), max_size=30))
def test_chunks_cut_anywhere_give_the_same_events(cuts: list[int]) -> None:
    parser = TraceParser()
    events = []
    bounds = [0, *sorted(cuts), len(RAW)]
    for a, b in zip(bounds, bounds[1:], strict=False):
        events += parser.feed(RAW[a:b], "a.log")
    events += parser.close()
    assert _signature(events) == WHOLE and parser.malformed == 0


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(st.integers(min_value=0, max_value=1), st.integers(min_value=1, max_value=20_000)), max_size=40))
def test_two_ranks_interleaved(steps: list[tuple[int, int]]) -> None:
    names = ["dedicated_log_torch_trace_rank_0_a.log", "dedicated_log_torch_trace_rank_1_b.log"]
    pos = [0, 0]
    parser = TraceParser()
    events = []
    for i, n in [*steps, (0, len(RANKS[0])), (1, len(RANKS[1]))]:
        events += parser.feed(RANKS[i][pos[i]:pos[i] + n], names[i])
        pos[i] += n
    events += parser.close()
    s = summarize(events)
    assert s.ranks == [0, 1] and parser.malformed == 0 and s.totals["compiles"] == 2
    assert [e.rank for e in events if e.kind == "compilation_metrics"] in ([0, 1], [1, 0])


GARBAGE = st.text(min_size=1, max_size=80).filter(lambda t: "\n" not in t and not t.startswith("\t") and t.strip() != "")


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(junk=st.lists(GARBAGE, min_size=1, max_size=8), where=st.lists(st.integers(min_value=0, max_value=10_000), min_size=8, max_size=8))
def test_garbage_lines_are_counted_and_skipped(junk: list[str], where: list[int]) -> None:
    lines = RAW.decode().split("\n")
    envelope_lines = [i for i, ln in enumerate(lines) if ln.startswith("V")]
    spots = sorted({envelope_lines[w % len(envelope_lines)] for w in where[: len(junk)]}, reverse=True)
    for spot, text in zip(spots, junk, strict=False):
        lines.insert(spot, text)  # before an envelope line: the payload before it ends, nothing else moves
    events, parser = parse_text("\n".join(lines))
    assert parser.malformed == len(spots)
    assert [sig[1:] for sig in _signature(events)] == [sig[1:] for sig in WHOLE]


@settings(max_examples=examples(60), deadline=None)
@given(blob=st.binary(max_size=2000), cut=st.integers(min_value=0, max_value=2000))
def test_arbitrary_bytes_never_raise(blob: bytes, cut: int) -> None:
    parser = TraceParser(line_cap=512)
    events = parser.feed(blob[:cut], "x") + parser.feed(blob[cut:], "x") + parser.close()
    summarize(events, parser.malformed).to_dict()
    filter_text(blob)


def test_builder_follows_events_as_they_come() -> None:
    parser, builder = TraceParser(), SummaryBuilder()
    raw = trace_files("recompile_storm")[0].read_bytes()
    seen = []
    for i in range(0, len(raw), 4096):
        builder.add_all(parser.feed(raw[i:i + 4096], "a.log"))
        grow = builder.summary().frame("grow")
        seen.append(grow.compiles if grow else 0)
    builder.add_all(parser.close())
    assert seen == sorted(seen) and seen[0] < 4 and builder.summary().frame("grow").limit_hit  # type: ignore[union-attr]


@pytest.mark.torch
@pytest.mark.skipif(not TORCH_PYTHON, reason="needs torch here, or COCKPIT_TORCH_PYTHON set to a Python that has it")
def test_a_real_torch_job_through_the_filter(tmp_path: Path) -> None:
    env = dict(os.environ, TORCH_TRACE=str(tmp_path), TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))
    job = Path(__file__).parent / "lab" / "torch_jobs" / "recompile_storm.py"
    subprocess.run([str(TORCH_PYTHON), str(job)], env=env, check=True, timeout=300, capture_output=True)
    proc = _run_filter(tmp_path, "--once")
    out, _ = proc.communicate(timeout=60)
    s = summarize(parse_text(out)[0])
    assert s.frame("grow").limit_hit  # type: ignore[union-attr]

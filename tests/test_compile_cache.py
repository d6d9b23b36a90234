"""The ``compile cache`` stage's words (cockpit.core.compile_report.cache_stage_words) and the
cache inventory's parsing and words (cockpit.core.actions.cache_inventory), on recorded traces and
real shell output; no target needed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cockpit.core.actions.cache_inventory import FoundCache, human_size, inventory_script, parse_inventory
from cockpit.core.compile import CompileSummary, CompileTracker
from cockpit.core.compile_report import cache_stage_words
from cockpit.core.layers import Layer, Status

FIXTURES = Path(__file__).parent / "fixtures" / "torch_trace"


def summary(case: str) -> CompileSummary:
    t = CompileTracker()
    for f in sorted((FIXTURES / case).glob("dedicated_log_torch_trace_*.log")):
        t.feed(f.read_bytes(), f.name)
    t.close()
    return t.summary()


def test_cold_after_a_clear_is_proven() -> None:
    status, layer, detail, advice = cache_stage_words(summary("cache_cold"), cleared=True)
    assert (status, layer) == (Status.OK, Layer.APP)
    assert detail == "cold ✔: 2 graphs, every one a cache miss after clear-cache" and advice == ""


def test_hits_after_a_clear_fail_at_the_container_and_name_the_jobs_cache_dir() -> None:
    status, layer, detail, advice = cache_stage_words(summary("cache_warm"), cleared=True, cache_dir="/data/ind", source="[job] env")
    assert (status, layer) == (Status.FAIL, Layer.CONTAINER)
    assert detail == "warm: 2/2 hits after clear-cache: the cache cockpit cleared is not the one the job uses"
    assert "TORCHINDUCTOR_CACHE_DIR is /data/ind ([job] env)" in advice and "[cache] paths" in advice


def test_hits_after_a_clear_without_a_known_cache_dir_say_how_to_set_one() -> None:
    s = summary("cache_warm")
    s.cache_hits, s.cache_misses = 38, 2
    status, _, detail, advice = cache_stage_words(s, cleared=True)
    assert status is Status.FAIL and detail.startswith("mixed: 38/40 hits after clear-cache:")
    assert "sets no TORCHINDUCTOR_CACHE_DIR" in advice and "[job] env" in advice


@pytest.mark.parametrize(("case", "want"), [("cache_warm", "warm: 2/2 hits (no clear-cache this attempt)"),
                                            ("cache_cold", "cold: 0/2 hits (no clear-cache this attempt)")])
def test_without_a_clear_the_hits_are_information(case: str, want: str) -> None:
    status, layer, detail, _ = cache_stage_words(summary(case), cleared=False)
    assert (status, layer, detail) == (Status.OK, Layer.APP, want)


def test_no_trace_or_no_graphs_skip_with_the_reason() -> None:
    assert cache_stage_words(None, cleared=True)[:3] == (Status.SKIPPED, Layer.APP, "no torch.compile trace for this job")
    status, _, detail, _ = cache_stage_words(CompileSummary(), cleared=True)
    assert status is Status.SKIPPED and detail == "no compiled graphs in the trace yet (no cache lookups)"
    assert cache_stage_words(CompileSummary(), cleared=False)[0] is Status.SKIPPED


def test_sizes_and_entries_read_as_people_write_them() -> None:
    assert FoundCache("inductor/fxgraph", "job", 412 * 1024, 1203, "/x/fxgraph").words == "fxgraph 412 MiB 1,203 entries"
    assert FoundCache("triton", "default", 8, 1, "/x").words == "triton 8 KiB 1 entry"
    assert human_size(3 * 1024 * 1024) == "3.0 GiB" and human_size(None) == "? KiB"


def test_the_inventory_reads_the_launch_env_and_judges_what_it_found(tmp_path: Path) -> None:
    ind = tmp_path / "ind"
    (ind / "fxgraph").mkdir(parents=True)
    (ind / "fxgraph" / "a").write_bytes(b"x" * 5000)
    (ind / "aotautograd").mkdir()
    (ind / "aotautograd" / "b").write_text("y")
    script = inventory_script(None, {"TORCHINDUCTOR_CACHE_DIR": str(ind)}, str(tmp_path / "wd"), "")
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30, check=True).stdout
    inv = parse_inventory(out)
    root = next(f for f in inv.roots if f.kind == "inductor")
    assert (root.path, root.source, root.files) == (str(ind), "env", 2)
    assert [p.kind for p in inv.parts(root)] == ["inductor/fxgraph", "inductor/aotautograd"]
    j = inv.judged_of(root)
    assert j is not None and j.what == "present"
    # the same directory as the workdir: refused by the guard
    out = subprocess.run(["sh", "-c", inventory_script(None, {"TORCHINDUCTOR_CACHE_DIR": str(ind)}, str(ind), "")],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    j = parse_inventory(out).judged_of(root)
    assert j is not None and j.what == "refused" and j.rule == "workdir"

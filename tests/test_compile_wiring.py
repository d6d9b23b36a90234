"""The [compile] section, the trace directory a launch picks, and the markdown line of a summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.core.config import ConfigError, load_config, parse_config, section_docs
from cockpit.core.config.sections import CompileConfig

ROOT = Path(__file__).resolve().parents[1]


def test_sample_config_documents_every_compile_key() -> None:
    text = (ROOT / "sample_config.toml").read_text()
    assert "\n[compile]\n" in text
    block = text.split("\n[compile]\n", 1)[1].split("\n[", 1)[0]
    for key in section_docs(CompileConfig):
        assert f"\n{key} =" in block or f"# {key} =" in block, f"compile.{key} undocumented"
    cfg = load_config(ROOT / "sample_config.toml")
    assert cfg.compile == CompileConfig()


def test_compile_defaults_and_values(tmp_path: Path) -> None:
    p = tmp_path / "c.toml"
    p.write_text('[target]\nhost = "x"\n')
    cfg = load_config(p)
    assert (cfg.compile.trace, cfg.compile.trace_dir, cfg.compile.keep) == (True, "", 5)
    p.write_text('[target]\nhost = "x"\n[compile]\ntrace = false\ntrace_dir = "/tmp/tr-{attempt}"\nmax_mb = 10\nkeep = 0\n')
    cfg = load_config(p)
    assert (cfg.compile.trace, cfg.compile.trace_dir, cfg.compile.max_mb, cfg.compile.keep) == (False, "/tmp/tr-{attempt}", 10, 0)


@pytest.mark.parametrize("body, key, words", [
    ('trace_dir = "rel/dir"', "compile.trace_dir", "absolute"),
    ("keep = -1", "compile.keep", "0 or more"),
    ("max_mb = 0", "compile.max_mb", "greater than 0"),
    ("kep = 3", "compile.kep", "did you mean 'keep'"),
])
def test_compile_errors_name_the_key(tmp_path: Path, body: str, key: str, words: str) -> None:
    p = tmp_path / "c.toml"
    p.write_text(f'[target]\nhost = "x"\n[compile]\n{body}\n')
    with pytest.raises(ConfigError) as ei:
        load_config(p)
    assert key in str(ei.value) and words in str(ei.value)


def test_parse_config_has_a_compile_section() -> None:
    cfg = parse_config('[target]\nhost = "x"\n[compile]\nkeep = 2\n')
    assert cfg.compile.keep == 2


def _cfg(tmp_path: Path, extra: str = "") -> object:
    p = tmp_path / "c.toml"
    p.write_text('[target]\nhost = "x"\n[job]\ncommand = "python train.py"\nlog = "/w/logs/train-{attempt}.log"\n' + extra)
    return load_config(p)


def test_trace_plan_per_attempt_beside_the_log(tmp_path: Path) -> None:
    from cockpit.core.actions.compiletrace import trace_plan

    plan = trace_plan(_cfg(tmp_path), 7)  # type: ignore[arg-type]
    assert (plan.directory, plan.managed, plan.env) == ("/w/logs/.cockpit-trace/attempt-7", True, {"TORCH_TRACE": "/w/logs/.cockpit-trace/attempt-7"})
    plan = trace_plan(_cfg(tmp_path, '[compile]\ntrace_dir = "/scratch/t{attempt}"\n'), 2)  # type: ignore[arg-type]
    assert plan.directory == "/scratch/t2" and plan.managed
    assert trace_plan(_cfg(tmp_path, "[compile]\ntrace = false\n"), 2).directory == ""  # type: ignore[arg-type]


def test_the_users_own_torch_trace_wins(tmp_path: Path) -> None:
    from cockpit.core.actions.compiletrace import trace_plan

    plan = trace_plan(_cfg(tmp_path, '[job.env]\nTORCH_TRACE = "/mine"\n'), 3)  # type: ignore[arg-type]
    assert (plan.directory, plan.managed, plan.env) == ("/mine", False, {})
    p = tmp_path / "d.toml"
    p.write_text('[target]\nhost = "x"\n[job]\ncommand = "TORCH_TRACE=/tmp/tt python t.py"\n')
    plan = trace_plan(load_config(p), 3)
    assert (plan.directory, plan.managed) == ("/tmp/tt", False)


def test_prune_keeps_the_newest_attempts() -> None:
    from cockpit.core.actions.compiletrace import prune_list

    t = "/w/.cockpit-trace/attempt-{attempt}"
    names = [t.format(attempt=n) for n in (1, 2, 3, 10, 11)] + ["/w/.cockpit-trace/attempt-x", "/w/.cockpit-trace/other"]
    assert sorted(prune_list(names, t, 11, 3)) == [t.format(attempt=n) for n in (1, 2)]
    assert prune_list(names, t, 12, 0) == []
    assert sorted(prune_list(names, t, 12, 1)) == sorted(t.format(attempt=n) for n in (1, 2, 3, 10, 11))


FIXTURES = ROOT / "tests" / "fixtures" / "torch_trace"


def _summary(case: str):  # type: ignore[no-untyped-def]
    from cockpit.core.compile import CompileTracker

    t = CompileTracker()
    for f in sorted((FIXTURES / case).glob("dedicated_log_torch_trace_*.log")):
        t.feed(f.read_bytes(), f.name)
    t.close()
    return t.summary()


def test_the_markdown_line_says_frames_recompiles_breaks_seconds_and_cache() -> None:
    from cockpit.core.compile import CompileSummary, FrameRow
    from cockpit.core.compile_report import markdown_line

    s = CompileSummary(frames=[FrameRow(0, function="forward", compiles=9, total_compile_s=30.2,
                                        recompile_reasons=["0/7: size of L['x'] changed"], graph_break_count=1),
                               FrameRow(1, function="loss", compiles=1, total_compile_s=6.0), FrameRow(2, function="g", compiles=1, total_compile_s=5.0)],
                       cache_state="cold", cache_misses=3, events=40)
    assert markdown_line(s) == "compiled 3 frames, 8 recompiles (forward: size of L['x'] changed), 1 graph break, 41 s compiling; cache cold"
    storm = markdown_line(_summary("recompile_storm"))
    assert storm.startswith("compiled 1 frame, 3 recompiles (grow: tensor 'x' size mismatch") and storm.endswith("; recompile limit hit")
    assert markdown_line(_summary("cache_warm")).endswith("s compiling; cache warm")
    assert "1 failed compile" in markdown_line(_summary("compile_failure"))


def test_journal_keeps_the_latest_compile_and_history_and_compare_show_it(tmp_path: Path) -> None:
    from cockpit.core.compile import CompileSummary
    from cockpit.core.journal import Journal, render_markdown
    from cockpit.core.layers import Outcome
    from cockpit.core.metrics import MetricsStore
    from cockpit.core.metrics.compare import compare

    j = Journal(tmp_path / "journal.jsonl")
    a = j.start_attempt("one", "lab")
    j.record(a, "compile", summary=_summary("cache_cold").to_dict())
    storm = _summary("recompile_storm")
    j.record(a, "compile", summary=storm.to_dict())
    j.finish_attempt(a, Outcome.PASSED, summary="ok")
    b = j.start_attempt("two", "lab")
    j.finish_attempt(b, Outcome.FAILED, summary="no")
    rec = Journal(tmp_path / "journal.jsonl").get(a)
    assert rec is not None and rec.compile == storm.to_dict() and rec.to_dict()["compile"]["totals"]["recompiles"] == 3
    assert rec.compile is not None and CompileSummary.from_dict(rec.compile).to_dict() == storm.to_dict()
    md = render_markdown(j.attempts())
    assert "- **torch.compile:** compiled 1 frame, 3 recompiles (grow: tensor 'x' size mismatch" in md
    assert md.count("torch.compile") == 1  # attempt two wrote no trace
    d = compare(j, MetricsStore(tmp_path, None), a, b)
    assert d["a"]["compile"]["recompiles"] == 3 and d["a"]["compile_cell"].startswith("1 fr, 3 recomp, 0 breaks")
    assert d["b"]["compile"] is None and d["b"]["compile_cell"] is None


def test_alerts_become_findings_with_their_advice() -> None:
    from cockpit.core.compile_report import alert_findings

    fs = alert_findings(_summary("recompile_storm"), attempt=4)
    assert [f.kind for f in fs] == ["compile-recompile-limit"] and fs[0].severity.value == "error"
    assert "mark_dynamic" in fs[0].advice and fs[0].subject == {"alert": "recompile_limit", "frame": "0", "attempt": 4}
    assert [f.kind for f in alert_findings(_summary("cache_cold"))] == ["compile-cache-cold"]
    assert [f.kind for f in alert_findings(_summary("thread_race"))] == ["compile-threaded-compile"]


def test_failures_that_raised_are_named_with_frame_and_reason() -> None:
    from cockpit.core.compile_report import failure_words, unsuppressed_failures

    hits = unsuppressed_failures(_summary("compile_failure"))
    assert len(hits) == 1
    words = failure_words(*hits[0])
    assert words.startswith("torch.compile failed on `f` (compile_failure.py:13): BackendCompilerFailed: backend='broken_backend' raised")


class _ShellCtx:
    """What prepare_trace uses of an ActionContext: the config, and commands run by a real sh here."""

    def __init__(self, cfg: object) -> None:
        self.cfg = cfg

    async def run(self, command: str, *, timeout: float = 10.0) -> object:
        import asyncio

        from cockpit.core.remote.base import CommandResult

        p = await asyncio.create_subprocess_exec("/bin/sh", "-c", command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(p.communicate(), timeout)
        return CommandResult(command, p.returncode or 0, out, err)


async def test_prepare_trace_empties_its_dir_and_prunes_by_keep_and_size(tmp_path: Path) -> None:
    from cockpit.core.actions.compiletrace import prepare_trace, trace_plan

    p = tmp_path / "c.toml"
    p.write_text(f'[target]\nhost = "x"\n[job]\nlog = "{tmp_path}/logs/train-{{attempt}}.log"\n[compile]\nkeep = 3\nmax_mb = 1\n')
    cfg = load_config(p)
    root = tmp_path / "logs" / ".cockpit-trace"
    for n, kb in ((1, 10), (2, 700), (3, 600), (5, 1)):
        (root / f"attempt-{n}").mkdir(parents=True)
        (root / f"attempt-{n}" / "dedicated_log_torch_trace_x.log").write_bytes(b"x" * kb * 1024)
    (root / "keep-me").mkdir()
    plan = trace_plan(cfg, 5)
    said = await prepare_trace(_ShellCtx(cfg), plan, 5)  # type: ignore[arg-type]
    # keep = 3: attempt 5 (emptied) and the two newest before it (3, 2); 1 goes; then 1 MiB: 2 (700 KB, older) goes too
    assert sorted(d.name for d in root.iterdir()) == ["attempt-3", "attempt-5", "keep-me"]
    assert list((root / "attempt-5").iterdir()) == []
    assert said == f"TORCH_TRACE={root}/attempt-5; removed 2 older trace dir(s)"
    own = trace_plan(load_config(_write(tmp_path, '[job.env]\nTORCH_TRACE = "/elsewhere"\n')), 6)
    assert await prepare_trace(_ShellCtx(cfg), own, 6) == "TORCH_TRACE=/elsewhere (the job's own)"  # type: ignore[arg-type]


def _write(tmp_path: Path, extra: str) -> Path:
    p = tmp_path / "e.toml"
    p.write_text('[target]\nhost = "x"\n' + extra)
    return p

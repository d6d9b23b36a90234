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

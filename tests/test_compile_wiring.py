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

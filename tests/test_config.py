import os
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.core.config import ConfigError, JobConfig, TargetConfig, find_config, load_config, parse_config, section_docs

ROOT = Path(__file__).resolve().parents[1]


def write(tmp_path, text, name="cockpit.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_sample_config_loads_and_describes_the_seed_setup():
    cfg = load_config(ROOT / "sample_config.toml")
    assert (cfg.target.host, cfg.target.user, cfg.target.container, cfg.target.runtime) == ("10.1.2.6", "root", 200, "pct")
    assert cfg.job.workdir == "/workspace"
    assert cfg.log_path(3) == "/workspace/train_tl3.log"
    assert cfg.signatures and cfg.signatures[0].layer == "app"


def test_sample_config_documents_every_key():
    text = (ROOT / "sample_config.toml").read_text()
    for section, cls in (("target", TargetConfig), ("job", JobConfig)):
        for key in section_docs(cls):
            assert f"\n{key} =" in text or f"# {key} =" in text or f"[{section}.{key}]" in text, f"{section}.{key} undocumented"


@pytest.mark.parametrize(
    "text, key, words",
    [
        ('[target]\nhots = "x"\n', "target.hots", "did you mean 'host'"),
        ('[targte]\nhost = "x"\n', "targte", "did you mean 'target'"),
        ('[target]\nhost = "x"\nport = "22"\n', "target.port", "must be an integer"),
        ('[target]\nhost = "x"\nport = 70000\n', "target.port", "between 1 and 65535"),
        ('[target]\nhost = "x"\nruntime = "pcte"\n', "target.runtime", 'did you mean "pct"'),
        ('[target]\nhost = "x"\nruntime = "pct"\n', "target.container", "required"),
        ('[target]\nport = 22\n', "target.host", "missing"),
        ('[target]\nhost = "x"\n[job]\nstartup_timeout = -1\n', "job.startup_timeout", "greater than 0"),
        ('[target]\nhost = "x"\n[job]\nprogress_pattern = "step ("\n', "job.progress_pattern", "regular expression"),
        ('[target]\nhost = "x"\n[job]\nlog = "/w/train.log"\n', "job.log", "{attempt}"),
        ('[target]\nhost = "x"\n[job]\nworkdir = "workspace"\n', "job.workdir", "absolute"),
        ('[target]\nhost = "x"\n[job.env]\nX = [1]\n', "job.env.X", "string"),
        ('[target]\nhost = "x"\n[cache]\npaths = ["/"]\n', "cache.paths[0]", "destroy"),
        ('[target]\nhost = "x"\n[cache]\npaths = ["/home/alice"]\n', "cache.paths[0]", "home directory"),
        ('[target]\nhost = "x"\n[cache]\npaths = ["/tmp/../etc"]\n', "cache.paths[0]", ".."),
        ('[target]\nhost = "x"\n[cache]\npaths = [""]\n', "cache.paths[0]", "empty"),
        ('[target]\nhost = "x"\n[[signatures]]\npattern = "("\n', "signatures[0].pattern", "regular expression"),
        ('[target]\nhost = "x"\n[[signatures]]\npattern = "x"\nlayer = "gpus"\n', "signatures[0].layer", 'did you mean "gpu"'),
        ('[target]\nhost = "x"\n[ui]\ntheme = 3\n', "ui.theme", "must be a string"),
    ],
)
def test_errors_name_file_key_and_fix(tmp_path, text, key, words):
    p = write(tmp_path, text)
    with pytest.raises(ConfigError) as ei:
        load_config(p)
    e = ei.value
    assert e.key == key
    assert str(p) in e.message and key in e.message
    assert words in e.message


def test_invalid_toml_is_a_config_error(tmp_path):
    p = write(tmp_path, "[target\nhost=1")
    with pytest.raises(ConfigError) as ei:
        load_config(p)
    assert "invalid TOML" in ei.value.message and str(p) in ei.value.message


def test_relative_paths_are_relative_to_the_config_file(tmp_path):
    sub = tmp_path / "proj"
    sub.mkdir()
    p = write(sub, '[target]\nhost = "h"\n[deploy]\nsource = "src"\ndest = "/w"\n')
    cfg = load_config(p)
    assert cfg.deploy_source == sub.resolve() / "src"
    assert cfg.journal_path == sub.resolve() / ".cockpit" / "journal.jsonl"


def test_lookup_order(tmp_path, monkeypatch):
    explicit = write(tmp_path, '[target]\nhost = "a"\n', "a.toml")
    envp = write(tmp_path, '[target]\nhost = "b"\n', "b.toml")
    write(tmp_path, '[target]\nhost = "c"\n')  # ./cockpit.toml (cwd is tmp_path)
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "cockpit" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[target]\nhost = "d"\n')
    monkeypatch.setenv("COCKPIT_CONFIG", str(envp))
    assert find_config(explicit) == explicit
    assert find_config(None) == envp
    monkeypatch.delenv("COCKPIT_CONFIG")
    assert find_config(None).name == "cockpit.toml"
    (tmp_path / "cockpit.toml").unlink()
    assert find_config(None) == user
    user.unlink()
    assert find_config(None) is None
    with pytest.raises(ConfigError):
        find_config(tmp_path / "missing.toml")


def test_cli_config_error_exits_2_without_traceback(tmp_path):
    p = write(tmp_path, '[target]\nhost = "x"\n[job]\nlauncher = "nohup"\n')
    r = subprocess.run([sys.executable, "-m", "cockpit", "status", "--config", str(p)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert "job.launcher" in r.stderr and str(p) in r.stderr and "setsid" in r.stderr


def test_cli_version_and_help():
    r = subprocess.run([sys.executable, "-m", "cockpit", "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("cockpit ")
    r = subprocess.run([sys.executable, "-m", "cockpit", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "status" in r.stdout and "Exit codes" in r.stdout


def test_parse_config_accepts_identity_file_string():
    cfg = parse_config('[target]\nhost = "h"\n[ssh]\nidentity_file = "~/.ssh/k"\n')
    assert cfg.ssh.identity_file == ["~/.ssh/k"]


@pytest.mark.parametrize("path, rule", [
    ("/home/./someone", "home directories"), ("/usr/lib", "system directory"), ("/var/lib", "system directory"),
    ("/srv", "system directory"), ("/run", "system directory"), ("/proc/1", "kernel, device and system trees"),
    ("/sys/fs/cgroup", "kernel, device and system trees"), ("/workspace", "system directory"),
    ("/data/job", "what the job needs"), ("/data/job/", "what the job needs"),
])
def test_clear_cache_refuses_what_it_must_never_remove(path, rule):
    from cockpit.core.config import check_cache_path

    why = check_cache_path(path, ("/data/job/run", "/data/job"))
    assert why is not None and rule in why, why


def test_clear_cache_accepts_a_real_cache_and_judges_it_normalised():
    from cockpit.core.config import check_cache_path, norm_remote_path

    assert check_cache_path("/tmp/torchinductor_root/", ("/workspace",)) is None
    assert norm_remote_path("/tmp/./x/") == "/tmp/x"

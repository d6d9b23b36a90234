"""Names checked once, at load: every name and one-line value that goes into a command, a script, a
title or a file name is refused when it holds a control character or leaves its character set,
with an error naming the file, the key and the fix; the generated Slurm script never carries a raw
newline in its comment line even when a config built in code skips the loader."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.core.config import ConfigError, load_config, parse_config
from cockpit.core.slurm.launch import job_script

BASE = '[target]\nhost = "gpu1"\n'
INJECT = "ok\ntouch /tmp/P\n#"
OSC = "ct\x1b]2;pwned\x07"


def _toml(s: str) -> str:
    """``s`` as a TOML basic string (control characters as \\uXXXX escapes)."""
    out = "".join(c if c.isprintable() and c not in '"\\' else f"\\u{ord(c):04x}" for c in s)
    return f'"{out}"'


HOSTILE = [
    (BASE + f"name = {_toml(INJECT)}\n", "target.name"),
    (BASE + f"name = {_toml(OSC)}\n", "target.name"),
    (BASE + f"name = {_toml('ct' + chr(0x202E) + '002')}\n", "target.name"),  # a bidi override
    (BASE + 'name = "ct;rm -rf /"\n', "target.name"),  # outside the set, no control character
    (BASE + f'runtime = "docker"\ncontainer = {_toml("trainer" + chr(10) + "x")}\n', "target.container"),
    (BASE + f"pct = {_toml('pct' + chr(10) + 'reboot')}\n", "target.pct"),
    (BASE + f'[gpu]\nnvidia_smi = {_toml("nvidia-smi" + chr(27) + "[2J")}\n', "gpu.nvidia_smi"),
    (BASE + f"[job]\npy_spy = {_toml('py-spy' + chr(13))}\n", "job.py_spy"),
    (BASE + f"[job]\nworkdir = {_toml('/w' + chr(10) + 'x')}\n", "job.workdir"),
    (BASE + f"[cache]\npaths = [{_toml('/tmp/c' + chr(10) + 'x')}]\n", "cache.paths"),
    (BASE + f'[ui]\ntheme = {_toml("dark" + chr(27) + "]0;t" + chr(7))}\n', "ui.theme"),
    ('[target]\nhost = "gpu1"\n' + f'[[targets]]\nname = {_toml(INJECT)}\n', "targets[0].name"),
    ('[target]\nhost = "gpu1"\n[[targets]]\nname = "a"\n[[targets]]\nname = "b"\n'
     f'[[groups]]\nname = {_toml(OSC)}\ntargets = ["a", "b"]\n', "groups[0].name"),
    (BASE + f'[[actions]]\nname = {_toml(INJECT)}\ncommand = "true"\n', "actions[0].name"),
    (BASE + f'[[actions]]\nname = "x"\ncommand = "true"\nhelp = {_toml(OSC)}\n', "actions[0].help"),
    (BASE + f'[[signatures]]\npattern = "x"\nid = {_toml("a b")}\n', "signatures[0].id"),
    (BASE + f'[[signatures]]\npattern = "x"\nlabel = {_toml(OSC)}\n', "signatures[0].label"),
    ('[target]\nhost = "login"\nruntime = "slurm"\n[job]\ncommand = "true"\n'
     f'[slurm]\npartition = {_toml("gpu" + chr(10) + "#SBATCH --x")}\n', "slurm.partition"),
    ('[target]\nhost = "login"\nruntime = "slurm"\n[job]\ncommand = "true"\n'
     f'[slurm]\naccount = {_toml("ml team")}\n', "slurm.account"),
    ('[target]\nhost = "login"\nruntime = "slurm"\n[job]\ncommand = "true"\n'
     f'[slurm]\nextra_args = [{_toml("--comment=a" + chr(10) + "b")}]\n', "slurm.extra_args"),
    ('[target]\nhost = "login"\nruntime = "slurm"\n[job]\ncommand = "true"\n'
     f'[slurm]\nbin = {_toml("/opt/slurm/bin" + chr(10))}\n', "slurm.bin"),
]


@pytest.mark.parametrize("text, key", HOSTILE, ids=[k + f"-{i}" for i, (_, k) in enumerate(HOSTILE)])
def test_a_hostile_name_is_refused_at_load_naming_the_file_the_key_and_the_fix(tmp_path: Path, text: str, key: str) -> None:
    path = tmp_path / "cockpit.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as ei:
        load_config(path)
    e = ei.value
    assert e.key == key, e.message
    assert str(path) in e.message and e.fix, e.message
    assert all(c.isprintable() or c == "\n" for c in e.message), repr(e.message)  # the value shown escaped, never raw
    assert e.message.count("\n") == 1  # "file: key: problem" and "  fix: …"


@pytest.mark.parametrize("name", ["ct200", "ct 200 trainer", "gpu-box@lab:1", "a.b_c+d", "7"])
def test_valid_names_load(name: str) -> None:
    cfg = parse_config(BASE + f"name = {_toml(name)}\n[slurm]\npartition = \"gpu\"\naccount = \"ml-team\"\n")
    assert cfg.display_name == name and cfg.slurm.partition == "gpu"
    cfg = parse_config(BASE + 'runtime = "docker"\ncontainer = "trainer_1.a-b"\npct = "/usr/sbin/pct"\n'
                       '[gpu]\nnvidia_smi = "/usr/bin/nvidia-smi"\n[[actions]]\nname = "gpu-dump"\ncommand = "true"\n'
                       'help = "every GPU (nvidia-smi -q)"\n[[signatures]]\npattern = "x"\nid = "my.sig-1"\nlabel = "x: y"\n')
    assert cfg.target.container == "trainer_1.a-b" and cfg.actions[0].name == "gpu-dump" and cfg.signatures[0].id == "my.sig-1"


def test_the_error_is_what_the_cli_prints_and_it_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "cockpit.toml"
    path.write_text(BASE + f"name = {_toml(OSC)}\n")
    r = subprocess.run([sys.executable, "-m", "cockpit", "status", "--json", "--config", str(path)], capture_output=True,
                       text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    both = r.stdout + r.stderr
    assert "target.name" in both and "\x1b" not in both and "\x07" not in both


def test_the_slurm_script_comment_never_carries_a_raw_newline(tmp_path: Path) -> None:
    """Defence in depth: a config built in code (no loader) with the injecting name; the script
    generated for it, run by a real /bin/sh, runs only the job's command."""
    marker = tmp_path / "P"
    cfg = parse_config('[target]\nhost = "login"\nruntime = "slurm"\n[job]\ncommand = "echo job-ran"\n')
    cfg.target.name = f"ok\ntouch {marker}\n#"  # what the loader now refuses
    script = job_script(cfg, 3)
    comment = [ln for ln in script.splitlines() if ln.startswith("# ")]
    assert len(comment) == 1 and "touch" in comment[0]  # kept visible, inside the comment
    assert not any(ln.startswith("touch") for ln in script.splitlines())
    path = tmp_path / "job.sbatch"
    path.write_text(script)
    r = subprocess.run(["/bin/sh", str(path)], capture_output=True, text=True, timeout=30, cwd=tmp_path,
                       env={**os.environ, "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and r.stdout == "job-ran\n", (r.stdout, r.stderr)
    assert not marker.exists()

"""Slurm pieces that need no cluster: scontrol parsing, pending reasons, the sbatch line, [slurm] config errors."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from cockpit.config import ConfigError, load_config
from cockpit.core.layers import Layer
from cockpit.core.slurm.launch import job_script, sbatch_command
from cockpit.core.slurm.scontrol import SlurmJob, blocked_reason, parse_job_line

ROOT = Path(__file__).resolve().parent.parent
LINE = ("JobId=7 JobName=cockpit-x-1 JobState=PENDING Reason=ReqNodeNotAvail, UnavailableNodes:lab1 Dependency=(null) "
        "ExitCode=0:0 RunTime=00:00:00 Partition=debug NodeList=(null) WorkDir=/shared/my work StdOut=/shared/t-1.log")


def test_scontrol_one_line_is_parsed_with_spaces_in_values() -> None:
    f = parse_job_line(LINE)
    assert f["JobState"] == "PENDING" and f["Reason"] == "ReqNodeNotAvail, UnavailableNodes:lab1"
    assert f["WorkDir"] == "/shared/my work" and f["StdOut"] == "/shared/t-1.log"
    sj = SlurmJob("7", f, position=2, queued_total=3)
    assert sj.nodes == "" and "position 2 of 3 pending in debug" in sj.describe()


@pytest.mark.parametrize("exit_code, status", [("1:0", 1), ("0:0", 0), ("0:15", 143), ("0:9", 137), ("bad", None)])
def test_exit_code_becomes_a_shell_status(exit_code: str, status: int | None) -> None:
    assert SlurmJob("1", {"ExitCode": exit_code}).exit_status == status


@pytest.mark.parametrize("reason, layer", [
    ("Resources", None), ("Priority", None), ("Dependency", None),
    ("ReqNodeNotAvail, UnavailableNodes:lab1", Layer.HOST),
    ("Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions", Layer.HOST),
    ("PartitionDown", Layer.HOST), ("InvalidAccount", Layer.CONFIG), ("JobHeldUser", Layer.PROCESS),
])
def test_pending_reasons(reason: str, layer: Layer | None) -> None:
    got = blocked_reason(reason)
    assert (got[0] if got else None) is layer


def _cfg(tmp_path: Path, extra: str) -> object:
    p = tmp_path / "c.toml"
    p.write_text('[target]\nhost = "login"\nruntime = "slurm"\n[job]\ncommand = "python3 train.py --lr \'1e-4\'"\nworkdir = "/shared/w"\n'
                 'log = "/shared/w/t-{attempt}.log"\n' + extra)
    return load_config(p)


def test_sbatch_line_quotes_every_value(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, '[slurm]\npartition = "gpu"\ntime = "0:30:00"\ngpus = "a100:2"\nextra_args = ["--comment=a b; rm -rf /"]\n'
               '[job.env]\nHF_TOKEN = "hf_x y"\n')
    cmd = sbatch_command(cfg, 3, "/shared/w/t-3.log", "/shared/w/t-3.log.x.sbatch")
    words = shlex.split(cmd)
    assert words[:4] == ["cd", "/shared/w", "&&", "sbatch"]
    assert "--comment=a b; rm -rf /" in words and "--partition=gpu" in words and "--gpus=a100:2" in words
    assert "--output=/shared/w/t-3.log" in words and "--error=/shared/w/t-3.log" in words and "--chdir=/shared/w" in words
    script = job_script(cfg, 3)
    assert "export HF_TOKEN='hf_x y'" in script and script.rstrip().endswith(shlex.quote(cfg.job.command))  # type: ignore[attr-defined]


@pytest.mark.parametrize("extra, key, words", [
    ('[slurm]\ntime = "soon"\n', "slurm.time", "not a Slurm time limit"),
    ('[slurm]\nextra_args = ["train.sbatch"]\n', "slurm.extra_args", "not an option"),
    ('[slurm]\nscript = "../x.sbatch"\n', "slurm.script", "relative"),
    ('[slurm]\nscript = "x.sbatch"\n', "slurm.script", "needs [deploy]"),
    ('[slurm]\npartiton = "gpu"\n', "slurm.partiton", "did you mean 'partition'"),
    ('[slurm]\nnodes = 0\n', "slurm.nodes", "greater than 0"),
])
def test_slurm_config_errors_name_key_and_fix(tmp_path: Path, extra: str, key: str, words: str) -> None:
    with pytest.raises(ConfigError) as e:
        _cfg(tmp_path, extra)
    assert e.value.key == key and words in e.value.message


def test_the_sample_configs_slurm_block_loads(tmp_path: Path) -> None:
    text = (ROOT / "sample_config.toml").read_text()
    block = text[text.index("# [slurm]"):text.index("\n\n", text.index("# [slurm]"))]
    body = "\n".join(re.sub(r"^# ?", "", line) for line in block.splitlines())
    cfg = _cfg(tmp_path, body + "\n")
    s = cfg.slurm  # type: ignore[attr-defined]
    assert (s.partition, s.gpus, s.time, s.extra_args) == ("gpu", 4, "02:00:00", ["--mem=64G", "--qos=debug"])

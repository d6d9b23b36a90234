"""Slurm pieces that need no cluster: scontrol parsing, pending reasons, the sbatch line, [slurm] config errors."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from cockpit.core.config import ConfigError, load_config
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


# -- sacct, once scontrol has forgotten the job (MinJobAge) -----------------------------------------

@pytest.mark.parametrize(("line", "state", "status", "nodes"), [
    ("4242|FAILED|1:0|00:00:07|gpu-node-01", "FAILED", 1, "gpu-node-01"),
    ("4242|CANCELLED by 1000|0:15|00:01:02|gpu-node-[01-02]", "CANCELLED", 128 + 15, "gpu-node-[01-02]"),
    ("4242|OUT_OF_MEMORY|0:125|00:03:10|gpu-node-07", "OUT_OF_MEMORY", 128 + 125, "gpu-node-07"),  # Slurm's "signal" 125
    ("4242|NODE_FAIL|0:0|00:10:00|gpu-node-03", "NODE_FAIL", 0, "gpu-node-03"),
    ("4242|COMPLETED|0:0|01:00:00|gpu-node-01", "COMPLETED", 0, "gpu-node-01"),
])
def test_sacct_lines_read_as_scontrol_fields(line: str, state: str, status: int, nodes: str) -> None:
    from cockpit.core.slurm.scontrol import SlurmJob, parse_sacct

    f = parse_sacct(line, "4242")
    assert f is not None and f["source"] == "sacct"
    sj = SlurmJob("4242", f)
    assert (sj.state, sj.exit_status, sj.nodes) == (state, status, nodes)
    assert sj.evidence()["source"] == "sacct"


@pytest.mark.parametrize("text", [
    "sacct: error: Slurm accounting storage is disabled",
    "You are not running a supported accounting_storage plugin",
])
def test_a_cluster_without_accounting_is_recognised(text: str) -> None:
    from cockpit.core.slurm.scontrol import accounting_off, parse_sacct

    assert accounting_off(text) and parse_sacct(text, "4242") is None
    assert parse_sacct("4243|FAILED|1:0|00:00:07|n1", "4242") is None  # another job's line is not this one's


def _reader(job_id: str):
    from cockpit.core.actions.job import JobRecord
    from cockpit.core.slurm.state import SlurmReader

    r = object.__new__(SlurmReader)  # parse() only: no session behind it
    r.job = JobRecord(attempt=1, scheduler="slurm", sched_id=job_id, log_path="/shared/train-1.log")
    return r


def _out(job: str, acct: str | None) -> bytes:
    head = f"job={job}\n" + (f"acct={acct}\n" if acct is not None else "") + "queue=\nsize=120\nlog_mtime=1\nnow=1000\nnow_local=2026-12-02T10:00:00\n"
    return (head + "@@stat\n@@log\n").encode()


def test_an_aged_out_job_is_judged_from_sacct_where_there_is_accounting() -> None:
    from cockpit.core.layers import Layer

    st = _reader("4242").parse(_out("slurm_load_jobs error: Invalid job id specified", "4242|OUT_OF_MEMORY|0:125|00:03:10|gpu-node-07"))
    assert st.slurm is not None and st.slurm.known and st.slurm.state == "OUT_OF_MEMORY" and st.exited
    assert st.exit_code == 128 + 125 and st.scheduler_evidence()["slurm"]["source"] == "sacct"
    from cockpit.core.slurm.scontrol import ENDED_BY

    assert ENDED_BY["OUT_OF_MEMORY"][0] is Layer.CONTAINER


def test_without_accounting_an_aged_out_job_is_unknown_and_says_why() -> None:
    st = _reader("4242").parse(_out("slurm_load_jobs error: Invalid job id specified", "sacct: error: Slurm accounting storage is disabled"))
    assert st.slurm is not None and not st.slurm.known
    assert "no accounting" in st.slurm.describe()


def test_a_node_srun_cannot_reach_is_named_in_a_host_finding() -> None:
    from cockpit.core.layers import Layer
    from cockpit.core.slurm.nodes import MARK, node_findings, parse_node_procs

    out = (f"{MARK} node gpu-01\n{MARK} pids\nPID JOBID STEPID LOCALID GLOBALID\n4242 77 batch 0 0\n{MARK} ps\n@@cockpit-ps procps\n"
           " 4242     1  4242  4242 S        10  99.0 1000    4 -  alice  python3  python3 train.py\n"
           f"{MARK} node gpu-02\n{MARK} pids\nsrun: error: Unable to create step for job 77: Required node not available (down, drained or reserved)\n"
           f"{MARK} failed gpu-02 1\n")
    nodes = parse_node_procs(out, "77")
    assert nodes is not None and [n.node for n in nodes] == ["gpu-01", "gpu-02"]
    assert nodes[0].job_pids == {4242} and nodes[0].procs and nodes[0].procs[0].node == "gpu-01"
    assert not nodes[1].procs and "Required node not available" in nodes[1].error
    f = node_findings(nodes)
    assert len(f) == 1 and f[0].layer is Layer.HOST and "gpu-02" in f[0].summary
    assert parse_node_procs(f"{MARK} none\n", "77") is None  # queued or ended: no node to ask

"""A Slurm job on two nodes: its processes and GPUs asked on each node, a node that stops answering
named, node-local caches cleared through a step on the allocation.

A cluster of its own (``SlurmLab(nodes=2)``: one slurmctld, two slurmd ``lab1`` and ``lab2`` on
127.0.0.1, each on its own port), reached through the lab's sshd with ``[slurm] bin`` pointing at
its client wrappers.  Slow (a cluster start, jobs, a node killed): few tests; run them alone:
``python -m pytest -q tests/test_slurm_nodes_lab.py -x``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab.slurm import PARTITION, SlurmLab, _in_ci, slurm_unavailable_reason
from tests.lab.util import await_for

pytestmark = pytest.mark.lab

NODES = ["lab1", "lab2"]
STEP = ("--steps", 0, "--interval", 0.1)


@pytest.fixture(scope="module")
def cluster(lab: Any) -> Iterator[SlurmLab]:
    reason = slurm_unavailable_reason()
    if reason:
        if _in_ci():
            pytest.fail(f"the Slurm lab is required in CI: {reason}", pytrace=False)
        pytest.skip(f"Slurm lab unavailable: {reason}")
    s = SlurmLab(nodes=2).start()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def two(cluster: SlurmLab) -> Iterator[SlurmLab]:
    cluster.reset()
    yield cluster
    cluster.reset()


@pytest.fixture
def config(lab: Any, two: SlurmLab, tmp_path: Path) -> Callable[..., Any]:
    from cockpit.core.config import load_config

    src = two.work / "src"
    src.mkdir(exist_ok=True)
    (src / "train.py").write_text("print('the code under test')\n")

    def make(slurm_over: dict[str, Any] | None = None, **over: Any) -> Any:
        path = tmp_path / "cockpit.toml"
        lab.write_config(
            path,
            target={"name": "cluster", "runtime": "slurm", "container": None},
            job={"workdir": str(two.work), "log": f"{two.work}/train-{{attempt}}.log", "command": lab.jobsim_command(*STEP),
                 "stop_timeout": 5, "startup_timeout": 20},
            deploy={"source": str(src), "dest": str(two.work / "deployed")},
            gpu=None,
            slurm={"partition": PARTITION, "queue_wait": 5, "nodes": 2, "bin": str(two.bin_dir), **(slurm_over or {})},
            **{"cache": {"paths": [str(two.work / "cache")]}, **over},
        )
        return load_config(path)

    return make


async def test_a_two_node_job_shows_each_nodes_processes_and_gpus(engines: Any, config: Any, two: SlurmLab) -> None:
    eng = engines(config())
    res = await eng.attempt("slurm: two nodes", wait=True, follow=False)
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    assert res.job is not None and two.job_field(res.job.sched_id, "NodeList") == "lab[1-2]"
    v = await eng.observer.refresh_procs()
    assert v.error is None and v.nodes == NODES, (v.error, v.nodes, v.findings)
    assert {p.node for p in v.procs} == set(NODES)  # each node's own table, tagged with its node
    assert any("jobsim" in p.args for p in v.procs if p.pid in v.job_pids and p.node == "lab1")  # the batch step's node
    assert not [f for f in v.findings if f.kind == "node-unreachable"]
    g = await eng.observer.refresh_gpu()  # nvidia-smi on each allocated node, through a step there
    assert g.error is None and g.snapshot is not None, (g.error, g.snapshot and g.snapshot.findings)
    assert sorted({x.node for x in g.snapshot.gpus}) == NODES, [(x.node, x.index) for x in g.snapshot.gpus]
    assert all("H100" in x.name for x in g.snapshot.gpus)
    assert all(d["node"] in NODES for d in g.snapshot.to_dict()["gpus"])  # in the JSON too
    from cockpit.ui.panes.gpu import gpu_key

    assert len({gpu_key(x) for x in g.snapshot.gpus}) == len(g.snapshot.gpus)  # the same uuid on two nodes: two GPUs


async def test_a_node_that_stops_answering_is_named(engines: Any, config: Any, two: SlurmLab) -> None:
    eng = engines(config())
    res = await eng.attempt("slurm: a node dies", wait=True, follow=False)
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    two.kill_slurmd("lab2")  # lab2's slurmd gone: srun to it fails, then slurmctld marks it DOWN

    async def named() -> Any:
        v = await eng.observer.refresh_procs()
        bad = [f for f in v.findings if f.kind == "node-unreachable"]
        return (v, bad) if bad else None

    v, bad = await await_for(named, 60)
    assert len(bad) == 1 and "lab2" in bad[0].summary and bad[0].subject["node"] == "lab2", [f.summary for f in bad]
    assert bad[0].layer.value == "host" and "State=" in bad[0].summary, bad[0].summary  # what scontrol says of it
    assert {p.node for p in v.procs} == {"lab1"}  # the node that answers is still shown
    g = await eng.observer.refresh_gpu()  # lab1's GPUs still shown; lab2's named as not asked
    assert g.snapshot is not None and {x.node for x in g.snapshot.gpus} == {"lab1"}, g.snapshot and g.snapshot.gpus
    assert g.error and g.error.startswith("lab2: "), g.error
    assert any("lab2" in f.summary for f in g.snapshot.findings), [f.summary for f in g.snapshot.findings]


async def test_node_local_caches_are_cleared_through_a_step_on_each_node(engines: Any, config: Any, two: SlurmLab) -> None:
    cache = two.work / "node cache"  # a space: quoted all the way to the node
    eng = engines(config(slurm_over={"node_local_cache": True}, cache={"paths": [str(cache)]}))

    def fill() -> None:
        (cache / "inductor").mkdir(parents=True, exist_ok=True)
        (cache / "inductor" / "kernel.so").write_bytes(b"x" * 8192)

    fill()
    res = await eng.attempt("slurm: node-local caches", wait=True, follow=False)
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    st = next(s for s in res.verdict.stages if s.name == "clear-cache: on the nodes")
    assert st.status.value == "skipped" and "no Slurm job holds nodes" in st.detail, st.detail  # nothing to reach yet
    assert res.job is not None
    log = Path(res.job.log_path).read_text()  # the batch script cleared them on each node of the allocation
    for node in NODES:
        assert f"cockpit-cache {node} " in log, log[:2000]
    assert "removed" in log and not cache.exists()
    fill()  # the running job's nodes, reached by a step overlapping it
    v = await eng.run_action("clear-cache")
    on = next(s for s in v.stages if s.name.endswith("on the nodes"))
    assert on.status.value == "ok" and "lab1, lab2" in on.detail and res.job.sched_id in on.detail, (on.status, on.detail)
    assert [n["node"] for n in on.data["nodes"]] == NODES and sum(n["removed_kib"] for n in on.data["nodes"]) >= 8
    assert not cache.exists()

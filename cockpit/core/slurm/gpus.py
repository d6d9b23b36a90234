"""The GPUs of every node of a Slurm job: the usual GPU probe, once per allocated node, each run in
a step that overlaps the job's (``srun --jobid=ID --overlap -N1 -n1 -w NODE``), merged into one
snapshot whose GPUs and GPU processes carry their node (``GPU.node``; the pane prefixes it).

A node that cannot be asked (srun fails: the node is down, drained or its slurmd silent) is a
finding that names it, and the other nodes are still shown; a job on no node (queued, ended)
says so instead of showing the login node's GPUs.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Awaitable, Callable
from typing import Any

from ..layers import Finding, Layer, Severity
from ..probes.gpu.model import GPUSnapshot
from ..remote.base import RemoteError
from .state import slurm_cmd

__all__ = ["job_nodes_command", "parse_job_nodes", "on_node", "node_gpu_snapshot", "merge_node_snapshots", "no_node_note"]

#: what the probe is given on each node: a runner ``(cmd, timeout) -> result`` of the login node's session
Probe = Callable[[Callable[..., Awaitable[Any]]], Awaitable[GPUSnapshot]]


def no_node_note(job_id: str) -> str:
    return f"Slurm job {job_id} runs on no node now (queued or ended)"


def job_nodes_command(cfg: Any, job_id: str) -> str:
    """The running job's nodes, one a line (none: it is queued or ended)."""
    q = shlex.quote(job_id)
    return (f"_ck_n=$({slurm_cmd(cfg, 'squeue')} -h -j {q} -t RUNNING -o %N 2>/dev/null); "
            f"[ -z \"$_ck_n\" ] || {slurm_cmd(cfg, 'scontrol')} show hostnames \"$_ck_n\"")


def parse_job_nodes(out: bytes | str) -> list[str]:
    text = out.decode("utf-8", "replace") if isinstance(out, bytes) else out
    return [w for w in (line.strip() for line in text.splitlines()) if w and " " not in w]


def on_node(cfg: Any, job_id: str, node: str, command: str, *, timeout: float = 20) -> str:
    """``command`` (a shell string) on ``node`` of the job, in a step overlapping the job's."""
    return (f"timeout -s KILL {int(timeout)} {slurm_cmd(cfg, 'srun')} --jobid={shlex.quote(job_id)} --overlap -N1 -n1 "
            f"-w {shlex.quote(node)} --quiet sh -c {shlex.quote(command)}")


def merge_node_snapshots(per_node: list[tuple[str, GPUSnapshot | None, str]]) -> GPUSnapshot:
    """One snapshot of ``(node, snapshot or None, why not)``: GPUs and processes tagged with their
    node, every finding and error naming its node."""
    out = GPUSnapshot()
    first = True
    for node, snap, why in per_node:
        if snap is None:
            out.findings.append(Finding(Layer.HOST, "node-unreachable", f"node {node} of the job: its GPUs could not be asked: {why}",
                                        "check the node: scontrol show node NAME (DOWN, DRAINED?) and its slurmd",
                                        Severity.ERROR, {"node": node}))
            out.error = out.error or f"{node}: {why}"
            continue
        out.gpus += [dataclasses.replace(g, node=node) for g in snap.gpus]
        out.processes += [dataclasses.replace(p, node=node) for p in snap.processes]
        out.findings += [dataclasses.replace(f, summary=f"{node}: {f.summary}", subject={**f.subject, "node": node}) for f in snap.findings]
        out.exit_codes.update({f"{node}:{k}": v for k, v in snap.exit_codes.items()})
        out.unparsed += [f"{node}: {u}" for u in snap.unparsed]
        if snap.error and not out.error:
            out.error = f"{node}: {snap.error}"
        if first:
            out.method, out.method_note, out.pid_table, out.fd_holders = snap.method, snap.method_note, snap.pid_table, snap.fd_holders
            out.collected_at, first = snap.collected_at, False
    return out


async def node_gpu_snapshot(cfg: Any, job_id: str, login_run: Callable[..., Awaitable[Any]], probe: Probe) -> GPUSnapshot:
    """The probe on each of the job's nodes (see the module doc); ``login_run(cmd, timeout=…)`` runs
    on the login node; ``probe(runner)`` is one GPU refresh through ``runner``."""
    res = await login_run(job_nodes_command(cfg, job_id), timeout=20)
    nodes = parse_job_nodes(res.stdout)
    if not nodes:
        return GPUSnapshot(error=no_node_note(job_id))
    per_node: list[tuple[str, GPUSnapshot | None, str]] = []
    for node in nodes:
        def runner(cmd: str, timeout: float = 10.0, _node: str = node) -> Awaitable[Any]:
            return login_run(on_node(cfg, job_id, _node, cmd, timeout=timeout), timeout=timeout + 10)

        try:
            per_node.append((node, await probe(runner), ""))
        except RemoteError as e:
            per_node.append((node, None, e.message))
    return merge_node_snapshots(per_node)

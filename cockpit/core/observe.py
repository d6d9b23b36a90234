"""Observation of one target: processes, GPUs, the live log, host kernel messages.

Everything here *reads*; nothing changes the remote side.  Each refresh is one command through
the persistent session (the process table, the GPU query, the log probe), so a full refresh costs
a few milliseconds of remote time, not a new SSH connection per field.  Every part carries the
time it was collected (``collected_at``) and the error that stopped it, so a reader can always
tell stale data from fresh: a failed refresh keeps the last good data *and* says it is stale.

The engine owns one :class:`Observer`; the TUI calls its ``refresh_*`` methods from workers (one
at a time per part: polls never overlap) and renders the resulting plain data.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from .compile_follow import shell_pids as trace_shell_pids
from .config import Config
from .layers import Finding, Layer, Severity
from .logclass import classifier_for, user_signatures
from .observe_streams import Streams
from .observe_views import GPUView, KmsgView, LogView, Part, ProcsView
from .probes import gpu as gpu_probe
from .probes import kmsg as kmsg_probe
from .probes import procs as procs_probe
from .probes.logs import LogFollowerState, LogRing, LogUpdate
from .probes.procs.zombies import ZombieWatch, zombie_grace
from .remote.base import CommandResult, RemoteError, Transport
from .remote.hostsession import HostSession

if TYPE_CHECKING:  # pragma: no cover
    from .runtimes.base import JobNodes

__all__ = ["Observer", "ProcsView", "GPUView", "LogView", "KmsgView", "Part"]


class Observer:
    def __init__(self, cfg: Config, transport: Transport) -> None:
        self.cfg = cfg
        self.transport = transport
        self.procs = ProcsView()
        self.gpu = GPUView()
        self.log = LogView()
        self.kmsg = KmsgView()
        self.signatures = user_signatures(cfg)
        self.job_pids: set[int] = set()
        self.job_pgid: int | None = None
        #: the job's end is known (its fate is final): its pids missing from the table are no finding
        self.job_ended = False
        self.sched_id = ""  # a Slurm job's id: its processes are asked on its nodes
        self._gpu_probe: gpu_probe.GpuProbe | None = None
        self._gpu_procs = gpu_probe.ProcessProbe()
        #: the host's persistent shell (pct over SSH), for the probes that ask the host every refresh
        self.host = HostSession(transport)
        self._gpu_probe_key: tuple[str, str] | None = None
        #: the long-lived streams (kernel log, GPUs) that replace polls where they can
        self.streams = Streams(transport)
        #: the last full GPU probe's snapshot and its monotonic time (the streamed samples lie over it)
        self._gpu_full: gpu_probe.GPUSnapshot | None = None
        self._gpu_full_at: float | None = None
        #: set when the followed log changes (a new attempt): a wait on the old one returns
        self._log_switch: asyncio.Event | None = None
        self._kmsg_parsed: tuple[int, kmsg_probe.KmsgReport] | None = None
        #: when each zombie was first seen: a young one of PID 1 is not yet a finding
        self._zombies = ZombieWatch(zombie_grace(cfg))

    # -- job identity (set by the engine from the launch record) ---------------------------
    def set_job(self, pid: int | None, pgid: int | None, log_path: str | None, sched_id: str = "", *, ended: bool = False) -> None:
        self.job_pids = {pid} if pid else set()
        self.job_ended = ended
        self.job_pgid = pgid
        self.sched_id = sched_id  # a scheduler's job (Slurm): its processes are on its nodes
        if log_path and log_path != self.log.path:
            self.follow(log_path)

    def follow(self, path: str) -> None:
        """Start following ``path`` (a new attempt's log) from its beginning (a wait on the old one ends)."""
        if self._log_switch is not None:
            self._log_switch.set()
            self._log_switch = None
        self.log = LogView(path=path, follower=LogFollowerState(
            path, ring=LogRing(self.cfg.ui.log_lines), classifier=classifier_for(self.cfg, self.signatures), initial_tail_bytes=None))

    # -- refreshes ---------------------------------------------------------------------------
    async def refresh_procs(self, res: CommandResult | None = None) -> ProcsView:
        """The process table (``res``: the probe's answer when the caller ran it, pipelined)."""
        v = self.procs
        t0 = time.monotonic()
        nodes = self.transport.runtime.job_nodes
        if nodes is not None and self.sched_id:  # a job on nodes the target reaches (Slurm)
            return await self._refresh_node_procs(nodes, t0)
        try:
            # the probe bounds its own blocking part (`timeout -s KILL ps`): no watchdog fork needed
            if res is None:
                res = await self.transport.run(procs_probe.PS_COMMAND, timeout=10, cheap=True)
        except RemoteError as e:
            v.error, v.error_layer = e.message, e.layer
            return v
        procs, bad = procs_probe.parse_ps(res.stdout)
        tree = procs_probe.ProcTree(procs)
        members = procs_probe.job_members(tree, self.job_pids, self.job_pgid)
        own = procs_probe.own_processes(tree, self._session_shell_pid(), exclude=members)
        for shell in self._stream_shells():  # the streams that run in the target are cockpit's too
            own |= procs_probe.own_processes(tree, shell, exclude=members)
        findings = procs_probe.analyse(procs, job_pids=self.job_pids, job_pgid=self.job_pgid,
                                       job_command=self.cfg.job.command or None, own_pids=own, zombie_watch=self._zombies,
                                       engine=self.transport.runtime.zombie_engine, job_ended=self.job_ended)
        self.procs = ProcsView(collected_at=time.time(), duration_s=time.monotonic() - t0, procs=procs,
                               findings=findings, bad_lines=bad, job_pids=set(self.job_pids), own_pids=own,
                               gpu_mib=gpu_probe.memory_by_container_pid(self.gpu.snapshot))
        return self.procs

    async def _refresh_node_procs(self, job_nodes: JobNodes, t0: float) -> ProcsView:
        """A Slurm job's processes, on each of its nodes (the runtime's :class:`~.runtimes.base.JobNodes`)."""
        v = self.procs
        try:
            res = await self.transport.run(job_nodes.procs_command(self.cfg, self.sched_id), timeout=30)
        except RemoteError as e:
            v.error, v.error_layer = e.message, e.layer
            return v
        nodes = job_nodes.parse_procs(res.stdout, self.sched_id)
        if nodes is None:
            self.procs = ProcsView(collected_at=time.time(), duration_s=time.monotonic() - t0, nodes=[],
                                   note=f"Slurm job {self.sched_id} runs on no node now (queued or ended)")
            return self.procs
        procs = [p for n in nodes for p in n.procs]
        findings = job_nodes.findings(nodes)
        for n in nodes:
            findings += procs_probe.analyse(n.procs, job_pids=n.job_pids, job_command=None)
        self.procs = ProcsView(collected_at=time.time(), duration_s=time.monotonic() - t0, procs=procs, findings=findings,
                               bad_lines=[b for n in nodes for b in n.bad_lines], job_pids={p for n in nodes for p in n.job_pids},
                               nodes=[n.node for n in nodes])
        return self.procs

    def _stream_shells(self) -> list[int]:
        """Pids (the target's view) of the stream shells that run in the target now."""
        out = []
        gpu, waker = self.streams.gpu, self.streams.log
        if gpu is not None and gpu.ready and gpu.shell_pid and self.cfg.gpu.where != "host":
            out.append(gpu.shell_pid)
        if waker is not None and waker.shell_pid:
            out.append(waker.shell_pid)
        out += trace_shell_pids(self.transport)  # torch.compile's trace filter
        return out

    def _session_shell_pid(self) -> int | None:
        """The pid of the shell that ran the last probe (transports without a session: None)."""
        session = getattr(self.transport, "session", None)
        pid = getattr(session, "shell_pid", None)
        return pid if isinstance(pid, int) else None

    async def refresh_gpu(self) -> GPUView:
        g = self.cfg.gpu
        v = self.gpu
        if not g.enabled:
            v.error = "disabled in config ([gpu] enabled = false)"
            return v
        t0 = time.monotonic()
        key = (g.nvidia_smi, g.where)
        if self._gpu_probe is None or self._gpu_probe_key != key:
            # the fields this driver answers, and whether the host can be asked, are learnt once per session
            self._gpu_probe, self._gpu_probe_key = gpu_probe.GpuProbe(g.nvidia_smi), key
            self._gpu_procs = gpu_probe.ProcessProbe(self.transport.runtime.gpu_host_container, g.where)

        def runner(run: Any) -> gpu_probe.Runner:
            async def go(cmd: str) -> tuple[bytes, bytes, int | None]:
                res = await run(cmd, timeout=g.timeout * 2 + 5)
                return res.stdout, res.stderr, res.exit_code
            return go

        streamed = self._gpu_streamed(t0)
        if streamed is not None:
            return streamed
        probe, procs = self._gpu_probe, self._gpu_procs

        async def one(target_run: Any) -> gpu_probe.GPUSnapshot:  # GPU pids are host pids: mapped into the target
            return await procs.run(probe, runner(target_run), runner(self.host.run), g.timeout, self.procs.procs)

        try:
            job_nodes = self.transport.runtime.job_nodes
            if job_nodes is not None and self.sched_id:  # the job's GPUs: on each of its nodes
                snap = await job_nodes.gpu_snapshot(self.cfg, self.sched_id, self.transport.run, one)
            else:
                snap = await one(self.transport.run)
        except RemoteError as e:
            v.error, v.error_layer = e.message, e.layer
            return v
        self.gpu = GPUView(collected_at=snap.collected_at, duration_s=time.monotonic() - t0, snapshot=snap,
                           error=snap.error, error_layer=Layer.GPU if snap.error else None)
        self.procs.gpu_mib = gpu_probe.memory_by_container_pid(snap)
        self._gpu_full, self._gpu_full_at = snap, time.monotonic()
        if g.stream and self.transport.runtime.gpu_stream and snap.gpus:
            self.streams.gpu_follower(g.nvidia_smi, probe.fields["query-gpu"], self.cfg.ui.refresh_interval,
                                      on_host=g.where == "host", gpus=len(snap.gpus))
        return self.gpu

    def _gpu_streamed(self, t0: float) -> GPUView | None:
        """This refresh from the GPU stream (:mod:`.probes.gpu.follow`): its newest sample over the
        last full probe, while that is under ``[gpu] apps_interval`` old; None: run the full probe."""
        g, full, fol = self.cfg.gpu, self._gpu_full, self.streams.gpu
        if not g.stream or fol is None or full is None or self._gpu_full_at is None \
                or time.monotonic() - self._gpu_full_at >= g.apps_interval:
            return None
        sample = fol.fresh()
        if sample is None:
            return None
        if self.gpu.mode == "stream" and self.gpu.collected_at == sample[0]:
            return self.gpu  # no new sample since the last refresh
        snap = gpu_probe.merge_sample(full, fol.frame(sample[1]), sample[0])
        if snap is None:
            return None
        self.gpu = GPUView(collected_at=sample[0], duration_s=time.monotonic() - t0, snapshot=snap, error=snap.error,
                           error_layer=Layer.GPU if snap.error else None, mode="stream")
        return self.gpu

    async def refresh_log(self, max_bytes: int = 1 << 20, res: CommandResult | None = None) -> LogUpdate | None:
        """New bytes of the followed log (``res``: the answer to ``follower.command()`` when the
        caller ran it, pipelined)."""
        v = self.log
        f = v.follower
        if f is None:
            return None
        t0 = time.monotonic()
        try:
            if res is None:
                res = await self.transport.run(f.command(max_bytes), timeout=15)
        except RemoteError as e:
            v.error, v.error_layer = e.message, e.layer
            return None
        upd = f.apply(res.stdout, time.time())
        v.collected_at, v.error, v.error_layer, v.duration_s = time.time(), None, None, time.monotonic() - t0
        return upd

    async def wait_log(self, timeout: float) -> str:
        """Wait for the followed log to change without polling it (:mod:`.probes.log_waker`):
        ``changed`` (poll it now), ``quiet`` (``tail -F`` watched it for ``timeout`` s and saw
        nothing: the view is fresh as of now), or ``poll`` (no remote wait here: poll as usual)."""
        f = self.log.follower
        waker = self.streams.log_waker() if f is not None and f.exists is not False else None
        if f is None or waker is None:
            return "poll"
        switch = self._log_switch = self._log_switch or asyncio.Event()
        waiting = asyncio.ensure_future(waker.wait(f.path, f.offset, timeout))
        switched = asyncio.ensure_future(switch.wait())
        try:
            done, _ = await asyncio.wait({waiting, switched}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (waiting, switched):
                t.cancel()
            await asyncio.gather(waiting, switched, return_exceptions=True)
        if switched in done:
            return "changed"
        result = waiting.result() if waiting in done and not waiting.cancelled() else "error"
        if result != "quiet":
            return "changed" if result == "changed" else "poll"
        if self.log.follower is f:
            self.log.collected_at = time.time()
        return "quiet"

    async def refresh_kmsg(self) -> KmsgView:
        """Host kernel messages (where the runtime reads the host's: dmesg is not readable inside a container)."""
        v = self.kmsg
        rt = self.transport.runtime
        if not rt.reads_host_kmsg:
            v.error = rt.kmsg_refusal
            return v
        t0 = time.monotonic()
        fol = self.streams.kmsg_follower()
        if fol is not None and fol.ready:  # one long-lived `dmesg --follow`: nothing runs remotely
            if self._kmsg_parsed is None or self._kmsg_parsed[0] != fol.version:
                self._kmsg_parsed = (fol.version, kmsg_probe.parse_kmsg(fol.text()))
            rep, mode = self._kmsg_parsed[1], "follow"
        else:
            try:
                res = await self.transport.run_host(kmsg_probe.kmsg_command(), timeout=15)
            except RemoteError as e:
                v.error, v.error_layer = e.message, e.layer
                return v
            rep, mode = kmsg_probe.parse_kmsg(res.stdout), "poll"
        ct = str(self.cfg.target.container)
        findings = [f for f in rep.findings if f.subject.get("container") in (None, ct)]
        self.kmsg = KmsgView(collected_at=time.time(), duration_s=time.monotonic() - t0, findings=findings, mode=mode,
                             follow_error=fol.last_death if fol is not None and not fol.ready else None,
                             follow_error_layer=fol.last_death_layer if fol is not None and not fol.ready else None)
        return self.kmsg

    async def close(self) -> None:
        """Stop the streams the observer keeps open (the kernel log, the GPUs)."""
        await self.streams.close()

    async def refresh_all(self) -> None:
        """Every part once (``cockpit status``): the process table and the log's first read in one
        round trip (:meth:`~.remote.base.Transport.run_many`), then the GPUs and the kernel log."""
        f = self.log.follower
        procs_done = log_done = False
        if not (self.transport.runtime.job_nodes is not None and self.sched_id):
            cmds = [procs_probe.PS_COMMAND] + ([f.command(1 << 20)] if f is not None else [])
            try:
                # both bound their own blocking parts (ps under `timeout`, a read of a regular file)
                results = await self.transport.run_many(cmds, timeout=15, cheap=True)
            except RemoteError:
                results = []  # each part asks again on its own below and keeps its own error
            if len(results) == len(cmds):
                await self.refresh_procs(results[0])
                procs_done = True
                if f is not None:
                    upd = await self.refresh_log(res=results[1])
                    log_done = upd is not None and not upd.more
        if not procs_done:
            await self.refresh_procs()
        await self.refresh_gpu()
        while f is not None and not log_done:
            upd = await self.refresh_log()
            log_done = upd is None or not upd.more
        await self.refresh_kmsg()

    def findings(self) -> list[Finding]:
        out: list[Finding] = list(self.procs.findings)
        if self.gpu.snapshot is not None:
            out.extend(self.gpu.snapshot.findings)
        out.extend(self.kmsg.findings)
        f = self.log.follower
        if f is not None and f.classifier.first_error is not None:
            out.append(f.classifier.first_error.to_finding())
        return sorted(out, key=lambda x: (x.severity is not Severity.ERROR, x.layer.rank))

    def to_dict(self) -> dict[str, Any]:
        return {
            "processes": self.procs.to_dict(),
            "gpu": self.gpu.to_dict(),
            "log": self.log.to_dict(),
            "kernel": self.kmsg.to_dict(),
            "findings": [f.to_dict() for f in self.findings()],
            # how each part that can stream is read now: {"gpu": {"mode": "stream", "why": ""}, ...}
            "streams": {part: {"mode": mode, "why": why} for part, (mode, why) in self.streams.modes().items()},
        }

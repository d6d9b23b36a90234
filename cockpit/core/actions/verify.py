"""Verify a launched job in stages, with deadlines from config (DESIGN §5).

spawned → alive (not a zombie) → log created → log growing → progress marker seen (or, without a
``progress_pattern``, no crash for ``healthy_after`` seconds).

A job that needs minutes to load a model is ``pending``, not failed, until ``startup_timeout``.
Each tick is *one* command through the persistent session that returns the pid file, the exit
file, ``/proc/PID/stat``, the log's size and the log bytes since the last tick.

When the job dies, the crash is classified, most specific evidence first:

1. an error signature in its log (a Python traceback → ``app``; CUDA OOM → ``gpu``, …);
2. exit 126/127: the command was not found inside the container → ``container``;
3. killed by SIGKILL with no traceback, and the host kernel log has an OOM kill for it →
   ``container`` ("killed by the OOM killer");
4. otherwise the exit code or signal → ``process``.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import time
from dataclasses import dataclass, field
from typing import Any

from ..layers import Evidence, Layer, Stage, Status, Verdict
from .base import ActionContext, StageFailed, VerdictBuilder
from .job import JobRecord, describe_exit, read_stat

__all__ = ["verify", "VERIFY_PLAN", "LogScan"]

VERIFY_PLAN = [
    ("spawned", Layer.PROCESS),
    ("alive", Layer.PROCESS),
    ("log created", Layer.PROCESS),
    ("log growing", Layer.PROCESS),
    ("progress", Layer.APP),
]

#: first poll interval; it grows by half each tick up to TICK_MAX_S (a fast job is seen fast,
#: a job that loads a model for minutes costs a probe every half second)
TICK_S = 0.05
TICK_MAX_S = 0.5
READ_MAX = 1 << 20


@dataclass
class Tick:
    pid_text: str = ""
    stat_text: str = ""
    exit_code: int | None = None
    log_size: int = -1
    data: bytes = b""


def _tick_command(job: JobRecord, offset: int) -> str:
    q = shlex.quote
    return (
        f"p=$(cat {q(job.pid_file)} 2>/dev/null); echo \"pid=$p\"; "
        f"if [ -n \"$p\" ]; then echo \"stat=$(cat /proc/$p/stat 2>/dev/null)\"; else echo stat=; fi; "
        f"echo \"exit=$(cat {q(job.exit_file)} 2>/dev/null)\"; "
        f"if [ -e {q(job.log_path)} ]; then echo \"size=$(wc -c < {q(job.log_path)})\"; else echo size=-1; fi; "
        f"echo --; tail -c +{offset + 1} {q(job.log_path)} 2>/dev/null | head -c {READ_MAX}"
    )


def _parse_tick(out: bytes) -> Tick:
    t = Tick()
    head, sep, data = out.partition(b"\n--\n")
    if not sep:
        return t
    t.data = data
    for line in head.decode("utf-8", "replace").splitlines():
        k, _, v = line.partition("=")
        v = v.strip()
        if k == "pid":
            t.pid_text = v
        elif k == "stat":
            t.stat_text = v
        elif k == "exit" and v.lstrip("-").isdigit():
            t.exit_code = int(v)
        elif k == "size" and v.lstrip("-").isdigit():
            t.log_size = int(v)
    return t


@dataclass
class LogScan:
    """The log as verify reads it: progress marker, classified errors, a tail for evidence."""

    progress_re: re.Pattern[str] | None
    classifier: Any = None
    partial: bytes = b""
    lines: int = 0
    progress_line: str | None = None
    tail_lines: list[str] = field(default_factory=list)

    def feed(self, data: bytes) -> None:
        buf = self.partial + data
        *complete, self.partial = buf.split(b"\n")
        for raw in complete:
            self._line(raw.decode("utf-8", "replace").rstrip("\r"))

    def flush(self) -> None:
        if self.partial:
            self._line(self.partial.decode("utf-8", "replace"))
            self.partial = b""

    def _line(self, line: str) -> None:
        self.lines += 1
        self.tail_lines.append(line)
        if len(self.tail_lines) > 40:
            del self.tail_lines[:-40]
        if self.progress_line is None and self.progress_re is not None and self.progress_re.search(line):
            self.progress_line = line
        if self.classifier is not None:
            self.classifier.feed(line)

    def error(self) -> dict[str, Any] | None:
        """The first classified error (the root cause is usually the first), as plain data."""
        if self.classifier is None:
            return None
        return error_dict(self.classifier.first_error)

    def final_error(self) -> dict[str, Any] | None:
        return None if self.classifier is None else error_dict(self.classifier.final_error)

    def tail(self, n: int = 15) -> str:
        return "\n".join(self.tail_lines[-n:])


def error_dict(err: Any) -> dict[str, Any] | None:
    """A classifier match as the flat dict stored in verdicts and the journal."""
    if err is None:
        return None
    return {
        "layer": err.layer.value,
        "kind": err.kind,
        "label": err.label,
        "summary": err.label if not err.thread else f"{err.label} (thread {err.thread})",
        "advice": err.advice,
        "line": err.line,
        "line_no": err.line_no,
        "thread": err.thread,
        "traceback": list(err.traceback),
    }


def make_classifier(ctx: ActionContext) -> Any:
    from ..probes.signatures import Classifier, load_signatures

    user = [{"pattern": s.pattern, "layer": s.layer, "label": s.label or s.pattern, "advice": s.advice} for s in ctx.cfg.signatures]
    return Classifier(user=load_signatures(user))


async def _oom_evidence(ctx: ActionContext, job: JobRecord) -> str | None:
    """An OOM kill of the job in the host kernel log (pct only: dmesg is not readable inside)."""
    if not getattr(ctx.transport, "runtime", None) or not ctx.transport.runtime.in_container:  # type: ignore[attr-defined]
        return None
    try:
        from ..probes import kmsg

        res = await ctx.run_host(kmsg.kmsg_command(), timeout=10)
        report = kmsg.parse_kmsg(res.stdout)
        words = shlex.split(job.command or ctx.cfg.job.command)
        name = os.path.basename(words[0]) if words else "python3"
        hit = kmsg.oom_killed(report.findings, name, job.launched_at - 5, container=ctx.cfg.target.container)
        return hit.summary if hit is not None else None
    except Exception:  # evidence gathering must never hide the verdict itself
        return None


async def verify(ctx: ActionContext, job: JobRecord, verdict: Verdict | None = None, *, wait: bool = True) -> Verdict:
    """Check the job; with ``wait`` keep checking until a definite answer or a deadline."""
    cfg = ctx.cfg
    vb = VerdictBuilder(ctx, "verify", VERIFY_PLAN, verdict)
    progress_re = re.compile(cfg.job.progress_pattern) if cfg.job.progress_pattern else None
    scan = LogScan(progress_re, make_classifier(ctx))
    ctx.state["log_scan"] = scan
    started = job.launched_at or time.time()
    startup_deadline = started + cfg.job.startup_timeout
    healthy_at = started + cfg.job.healthy_after
    offset = 0
    log_seen_at: float | None = None
    last = Tick()
    final_stat = None
    tick = TICK_S

    while True:
        res = await ctx.run(_tick_command(job, offset), timeout=10)
        t = _parse_tick(res.stdout)
        last = t
        now = time.time()
        if t.log_size >= 0 and t.log_size < offset:  # truncated or replaced under us
            offset = 0
            continue
        if t.data:
            if t.log_size >= 0:  # bytes written after the size was taken are read next tick
                t.data = t.data[: max(0, t.log_size - offset)]
            offset += len(t.data)
            scan.feed(t.data)
        stat = read_stat(t.stat_text) if t.stat_text else None
        if stat is not None and job.start_time is not None and stat.start_time != job.start_time:
            stat = None  # the pid was reused: not our job
        alive = stat is not None and not stat.state.startswith("Z")
        exited = t.exit_code is not None or bool(t.pid_text and not alive)
        final_stat = stat

        if t.log_size >= 0 and log_seen_at is None:
            log_seen_at = now

        if exited:
            scan.flush()
            break
        if scan.progress_line is not None:
            break
        if progress_re is None and alive and now >= healthy_at and log_seen_at is not None:
            break
        if now >= startup_deadline or not wait:
            break
        await asyncio.sleep(tick)
        tick = min(TICK_MAX_S, tick * 1.5)

    if not cfg.job.capture_output and (last.exit_code is not None or not last.stat_text):
        # the job writes its own log; a crash's traceback went to its console file
        con = await ctx.run(f"tail -c 65536 {shlex.quote(job.log_path + '.console')} 2>/dev/null", timeout=10)
        scan.feed(con.stdout)
        scan.flush()
    evidence = Evidence(command=f"tail {job.log_path}", exit_code=last.exit_code, output=scan.tail())
    base = {"log_path": job.log_path, "log_lines": scan.lines}

    # spawned
    if not last.pid_text:
        async with vb.stage("spawned") as st:
            if not wait and time.time() < startup_deadline:
                st.pending("no pid file yet")
            else:
                raise StageFailed(Layer.PROCESS, f"the job never wrote {job.pid_file}: it never spawned", evidence=evidence)
        return vb.finish()
    async with vb.stage("spawned") as st:
        st.ok(f"pid {last.pid_text} (group {job.pgid})", **base)

    # alive
    stat = final_stat  # as the loop judged it (a reused pid is not our job)
    dead = last.exit_code is not None or stat is None or stat.state.startswith("Z")
    async with vb.stage("alive") as st:
        if dead and scan.progress_line is None:
            await _crash(ctx, job, last, scan, evidence)
        elif dead:
            st.ok(f"reached progress, then {describe_exit(last.exit_code) if last.exit_code is not None else 'exited'}")
        else:
            st.ok(f"running ({stat.state}), {stat.threads} threads" if stat else "running")
    if vb.failed:
        return vb.finish()

    async with vb.stage("log created") as st:
        if log_seen_at is not None or last.log_size >= 0:
            st.ok(f"{job.log_path} exists")
        elif time.time() < startup_deadline:
            st.pending(f"{job.log_path} not created yet ({time.time() - started:.0f}s of {cfg.job.startup_timeout:g}s)")
        else:
            raise StageFailed(Layer.PROCESS, f"{job.log_path} was never created within startup_timeout ({cfg.job.startup_timeout:g}s)",
                              evidence=evidence, advice="does the job write where [job] log says? is it stuck before logging?")
    if vb.failed or vb.verdict.stages[-1].status is Status.PENDING:
        return _pending_rest(vb, "log created")

    async with vb.stage("log growing") as st:
        if last.log_size > 0:
            st.ok(f"{last.log_size} bytes, {scan.lines} lines")
        elif time.time() < startup_deadline:
            st.pending(f"log is empty ({time.time() - started:.0f}s of {cfg.job.startup_timeout:g}s)")
        else:
            raise StageFailed(Layer.PROCESS, f"the log stayed empty for startup_timeout ({cfg.job.startup_timeout:g}s)", evidence=evidence)
    if vb.failed or vb.verdict.stages[-1].status is Status.PENDING:
        return _pending_rest(vb, "log growing")

    async with vb.stage("progress") as st:
        err = scan.error()
        if scan.progress_line is not None:
            st.ok(f"progress marker seen: {scan.progress_line[:200]}")
        elif progress_re is None and time.time() >= healthy_at:
            st.ok(f"no crash for {cfg.job.healthy_after:g}s (healthy_after)")
        elif time.time() < startup_deadline:
            st.pending("waiting for " + (f"/{cfg.job.progress_pattern}/" if progress_re else f"{cfg.job.healthy_after:g}s without a crash"))
        else:
            layer = Layer(err["layer"]) if err else Layer.APP
            detail = (f"alive but no progress marker within startup_timeout ({cfg.job.startup_timeout:g}s)"
                      + (f"; log shows {err.get('label')}" if err else ""))
            raise StageFailed(layer, detail, evidence=evidence, data={"first_error": err} if err else None,
                              advice="is the job hung (stuck compiling, deadlocked threads)? check the process pane and py-spy")
    return vb.finish()


def _pending_rest(vb: VerdictBuilder, after: str) -> Verdict:
    names = [n for n, _ in VERIFY_PLAN]
    for n in names[names.index(after) + 1 :]:
        vb.verdict.add(_pending_stage(n, dict(VERIFY_PLAN)[n]))
    return vb.finish()


def _pending_stage(name: str, layer: Layer) -> Stage:
    return Stage(name, Status.PENDING, layer, "waiting")


async def _crash(ctx: ActionContext, job: JobRecord, t: Tick, scan: LogScan, evidence: Evidence) -> None:
    """Raise the most specific explanation of why the job died."""
    code = t.exit_code
    how = describe_exit(code) if code is not None else "died (no exit status recorded)"
    err = scan.error()
    final = scan.final_error()
    data = {"exit_code": code, "first_error": err, "final_error": final}
    if err is not None and err.get("layer") in ("app", "gpu"):
        raise StageFailed(Layer(err["layer"]), f"{how}: {err.get('label', 'error')}", evidence=evidence, advice=err.get("advice", ""), data=data)
    if code in (126, 127):
        raise StageFailed(Layer.CONTAINER, f"{how}: the command or its interpreter was not found inside the target",
                          evidence=evidence, advice="use an absolute path in [job] command (pct exec's PATH is minimal)", data=data)
    if code is not None and code - 128 == 9:
        oom = await _oom_evidence(ctx, job)
        if oom:
            data["oom"] = oom
            raise StageFailed(Layer.CONTAINER, f"killed by the OOM killer: {oom}", evidence=evidence,
                              advice="the container ran out of memory: raise its memory limit or lower the batch size", data=data)
    if err is not None:
        raise StageFailed(Layer(err["layer"]), f"{how}: {err.get('label', 'error')}", evidence=evidence, advice=err.get("advice", ""), data=data)
    raise StageFailed(Layer.PROCESS, f"{how}, with no traceback in the log", evidence=evidence,
                      advice="read the log tail; a SIGKILL without a traceback is often the OOM killer" if code == 137 else "", data=data)


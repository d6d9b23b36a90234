"""The connectivity stages: ssh reached → host/runtime answers → target shell answers → workdir.

The target shell and the workdir are asked first, in one command through the persistent session.
For a container, its shell answering proves the host and the container up, and the runtime's own
status tool (``pct status``, ``docker inspect``) is asked only when it did not: it names why (the
container is stopped, the tool is missing), so the verdict's layer is the same either way.

These are the first stages of ``cockpit status`` and of every action: until they pass, nothing
cockpit says about the job can be trusted, and an attempt that stops here is ``untested``.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Callable

from .config import Config
from .layers import Layer, Stage, Status, Verdict
from .paths import inside, norm_remote_path
from .remote.base import CommandResult, RemoteError, Transport
from .remote.hostsession import HostSession

__all__ = ["check_connectivity", "CONNECTIVITY_STAGES"]

CONNECTIVITY_STAGES = [
    ("ssh reached", Layer.SSH),
    ("host answers", Layer.HOST),
    ("target shell answers", Layer.CONTAINER),
    ("workdir exists", Layer.CONTAINER),
]


def _stage_from_error(name: str, err: RemoteError, t0: float) -> Stage:
    return Stage(name, Status.FAIL, err.layer, err.message, evidence=err.evidence(), advice=err.hint, duration_s=time.monotonic() - t0)


async def check_connectivity(transport: Transport, cfg: Config, verdict: Verdict | None = None, *,
                             on_stage: Callable[[str, Stage], None] | None = None,
                             host: HostSession | None = None) -> Verdict:
    """The four connectivity stages into ``verdict``; ``on_stage("connect", stage)`` sees each as decided.

    ``host``: the host's persistent shell, which asks the runtime's status (``pct status``) without a
    new SSH channel once it is up (it is started meanwhile when not); it falls back to a channel of its own when that shell cannot be had, so a failure
    reads as it would on a channel (ssh when the connection went, host otherwise)."""
    v = verdict if verdict is not None else Verdict("status")
    remaining = list(CONNECTIVITY_STAGES)

    def emit(stage: Stage) -> None:
        v.add(stage)
        if on_stage is not None:
            on_stage("connect", stage)

    def done(stage: Stage) -> bool:
        emit(stage)
        remaining.pop(0)
        if not stage.failed:
            return True
        for name, layer in remaining:
            emit(Stage(name, Status.NOT_REACHED, layer, "not reached: an earlier stage failed"))
        remaining.clear()
        return False

    # 1. ssh
    t0 = time.monotonic()
    if cfg.target.transport == "local":
        ok = done(Stage("ssh reached", Status.SKIPPED, Layer.SSH, "local transport: no SSH involved"))
    else:
        try:
            await transport.connect(force=True)
            ok = done(Stage("ssh reached", Status.OK, Layer.SSH, f"connected to {transport.description}", duration_s=time.monotonic() - t0))
        except RemoteError as e:
            ok = done(_stage_from_error("ssh reached", e, t0))
    if not ok:
        return v

    # 2. host / runtime; meanwhile the target shell (3) and the workdir (4) are asked, in one
    # command, whose answer is judged only once the host stage passed
    wd = cfg.job.workdir
    probe = asyncio.ensure_future(transport.run(_shell_command(wd), timeout=10))
    # its failure is judged by stage 3, or not wanted (an earlier stage failed): never left unretrieved
    probe.add_done_callback(lambda f: f.cancelled() or f.exception())
    try:
        return await _after_ssh(transport, cfg, v, done, probe, host)
    finally:
        probe.cancel()  # a no-op once it answered


async def _after_ssh(transport: Transport, cfg: Config, v: Verdict, done: Callable[[Stage], bool],
                     probe: asyncio.Future[CommandResult], host: HostSession | None = None) -> Verdict:
    t0 = time.monotonic()
    rt = transport.runtime
    try:
        if rt.in_container and (shell := await _answered(probe)) is not None:
            # a shell inside the container answered: it runs, and the host that ran it answers.
            # Its runtime's status tool (``pct status``: a Perl program, ~0.3-0.5 s on a Proxmox
            # host; ``docker inspect``) is asked only when the shell did not, to name why
            ok = done(Stage("host answers", Status.OK, Layer.HOST, f"container {rt.container} is running (its shell answers)",
                            evidence=shell.evidence(), duration_s=shell.duration_s))
            if host is not None and not host.ready:
                host.start_soon()  # the host's own questions later (the runtime's status, the GPUs' processes) use it
        elif rt.in_container:
            cmd = rt.status_command()
            if host is not None and host.ready:
                res = await host.run(cmd, timeout=20)
            else:  # its own channel costs less than starting the host's shell first: that starts meanwhile
                if host is not None:
                    host.start_soon()
                res = await transport.run_host(cmd, timeout=20)
            out = (res.text + res.err_text).strip()
            state = rt.parse_status(res.text) if res.ok else None
            if state == "running":
                ok = done(Stage("host answers", Status.OK, Layer.HOST, f"container {rt.container} is running", evidence=res.evidence(), duration_s=res.duration_s))
            else:
                from .remote.session import classify_start_failure

                if res.timed_out:
                    detail = f"`{cmd}` did not answer within 20s"
                elif state == "stopped":
                    detail = rt.stopped_detail(res.text)
                elif res.exit_code == 127:
                    detail = f"{rt.tool} not found on the host: {out}"
                else:
                    detail = classify_start_failure(res.exit_code, out, runtime=rt.start_words)[1]
                ok = done(Stage("host answers", Status.FAIL, Layer.HOST, detail, evidence=res.evidence(), duration_s=res.duration_s,
                                advice=(f"start the container ({rt.start_hint()}) or {rt.restart_word} it from cockpit" if "stopped" in detail
                                        else classify_start_failure(res.exit_code, out, runtime=rt.start_words)[2] if not res.timed_out else "")))
        else:
            res = await transport.run_host("uname -srm", timeout=10)
            st = Status.OK if res.ok else Status.FAIL
            ok = done(Stage("host answers", st, Layer.HOST, res.text.strip() or res.err_text.strip(), evidence=res.evidence(), duration_s=res.duration_s))
    except RemoteError as e:
        ok = done(_stage_from_error("host answers", e, t0))
    if not ok:
        return v

    # 3. persistent shell inside the target
    t0 = time.monotonic()
    said: str | None = None
    try:
        res = await probe
        lines = res.text.splitlines()
        if lines and lines[-1].startswith(_WD_MARK + " "):
            said = lines.pop()[len(_WD_MARK) + 1:]
            res = CommandResult(res.command, res.exit_code, "".join(ln + "\n" for ln in lines).encode(), res.stderr, res.duration_s, res.timed_out)
        if _says_ok(res):
            who = " ".join(res.text.split()[1:])
            ok = done(Stage("target shell answers", Status.OK, Layer.CONTAINER, f"shell in {rt.describe()} answers ({who})", evidence=res.evidence(),
                            duration_s=max(res.duration_s, time.monotonic() - t0)))
        else:
            ok = done(Stage("target shell answers", Status.FAIL, Layer.CONTAINER, f"the shell answered with exit {res.exit_code}", evidence=res.evidence(), duration_s=time.monotonic() - t0))
    except RemoteError as e:
        ok = done(_stage_from_error("target shell answers", e, t0))
    if not ok:
        return v

    # 4. workdir: its answer came with the shell's (asked alone when it did not)
    t0 = time.monotonic()
    wd = cfg.job.workdir
    try:
        if said is not None and said.isdigit():
            res = CommandResult(_workdir_command(wd), int(said), duration_s=res.duration_s)
        else:
            res = await transport.run(_workdir_command(wd), timeout=10)
        if res.ok:
            done(Stage("workdir exists", Status.OK, Layer.CONTAINER, f"{wd} exists and is writable", evidence=res.evidence(), duration_s=res.duration_s))
        elif _deploy_creates(cfg, wd):
            creatable = await transport.run(_creatable_command(wd), timeout=10)
            if creatable.ok:
                done(Stage("workdir exists", Status.SKIPPED, Layer.CONTAINER,
                           f"{wd} does not exist yet: deploy creates it (under [deploy] dest {cfg.deploy.dest or wd})",
                           evidence=res.evidence(), duration_s=time.monotonic() - t0))
            else:
                done(Stage("workdir exists", Status.FAIL, Layer.CONTAINER,
                           f"{wd} does not exist and cannot be created: {creatable.text.strip() or 'no writable parent'}",
                           evidence=creatable.evidence(), duration_s=time.monotonic() - t0,
                           advice="fix [job] workdir and [deploy] dest, or create the parent directory with the right owner"))
        else:
            done(Stage("workdir exists", Status.FAIL, Layer.CONTAINER, f"{wd} does not exist or is not writable inside the target",
                       evidence=res.evidence(), duration_s=res.duration_s,
                       advice="create it, fix [job] workdir, or set [deploy] dest so that deploy creates it"))
    except RemoteError as e:
        done(_stage_from_error("workdir exists", e, t0))
    return v


async def _answered(probe: asyncio.Future[CommandResult]) -> CommandResult | None:
    """The target shell's answer when it answered ``ok``; None when it failed or did not answer
    (judged by stage 3 after the host stage names the runtime's view)."""
    try:
        res = await probe
    except RemoteError:
        return None
    return res if _says_ok(res) else None


def _says_ok(res: CommandResult) -> bool:
    """The target shell ran :func:`_shell_command` (its first line ``ok``)."""
    return res.ok and res.text.startswith("ok")


_WD_MARK = "cockpit-workdir"


def _workdir_command(wd: str) -> str:
    return f"test -d {shlex.quote(wd)} && test -w {shlex.quote(wd)}"


def _shell_command(wd: str) -> str:
    """The target shell's answer, then the workdir test's exit status on a marked last line."""
    return f"echo ok; id -un; hostname; {_workdir_command(wd)}; echo {_WD_MARK} $?"


def _deploy_creates(cfg: Config, wd: str) -> bool:
    """Deploy (``mkdir -p DEST``) will create ``wd``: it is DEST, inside it, or one of its parents."""
    src = cfg.deploy_source
    if src is None:
        return False
    dest = cfg.deploy.dest or wd
    if inside(dest, wd):  # mkdir -p DEST makes every parent
        return True
    rel = norm_remote_path(wd)[len(norm_remote_path(dest)):].lstrip("/")
    return inside(wd, dest) and src.is_dir() and (src / rel).is_dir()  # a directory the deploy unpacks


def _creatable_command(path: str) -> str:
    """Exit 0 when the nearest existing ancestor of ``path`` is a writable directory (prints it otherwise)."""
    return (f"d={shlex.quote(path)}; while [ ! -e \"$d\" ]; do d=$(dirname \"$d\"); done; "
            "if [ -d \"$d\" ] && [ -w \"$d\" ]; then exit 0; else echo \"$d is not a writable directory\"; exit 1; fi")

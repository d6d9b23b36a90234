"""Hostile config values are data: every remote command cockpit runs, built from values full of
quotes, ``$(…)``, backticks, ``;``, newlines and leading dashes, runs against the lab (real sshd,
real ``sh`` inside the pct emulator's container) and no marker file appears anywhere.  Values that
could never be safe are refused when the config loads, with the file, the key and the fix.

Each payload tries every way out of a quoting mistake, each with its own marker file (an absolute
path in the lab directory, which the container sees too) and one relative ``HOSTILE-MARK`` for
whatever the current directory is.  The job command is the one value that *is* shell code: it
carries the payload as one properly quoted argument to ``:``, so running it as the job is inert
and only a quoting mistake elsewhere (strays' grep, the supervisor, systemd-run) would set it off.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.actions.base import ActionContext
from cockpit.core.actions.job import launch, stop
from cockpit.core.actions.reboot import reboot
from cockpit.core.config import ConfigError, load_config
from cockpit.core.layers import Layer, Outcome
from cockpit.core.status import collect_status
from tests.lab import await_for
from tests.lab.sshd import to_toml

RELATIVE_MARK = "HOSTILE-MARK"


def payload(marks: Path, tag: str, *, newline: bool = True) -> str:
    """Every escape from a quoting mistake, each touching ``marks/TAG<n>``.  ``newline=False`` for
    the values the loader keeps to one line (paths and commands): the same escapes, a space for
    the newline."""
    m = f"{marks}/{tag}"
    return (f"-x '$(touch {m}1)' \"`touch {m}2`\" ;touch {m}3;{chr(10) if newline else ' '}touch {m}4 $(touch {m}5) \\$(touch {m}6) "
            f"&& touch {m}7 | touch {m}8 ;touch {RELATIVE_MARK}")


def _mkdir(p: str) -> None:
    os.makedirs(os.fsencode(p), exist_ok=True)


def _symlink(target: Path, link: str) -> str:
    _mkdir(os.path.dirname(link))
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(target, link)
    return link


class Hostile:
    """The hostile values, the directories they name, and the markers they would leave."""

    def __init__(self, lab: Any) -> None:
        self.lab = lab
        self.marks = lab.dir / "hostile-marks"
        self.marks.mkdir(exist_ok=True)
        for f in self.marks.iterdir():
            f.unlink()
        ws = str(lab.workspace(200))
        self.ws = ws
        p = self.p1
        self.workdir = f"{ws}/-wd {p('wd')}"
        self.log = f"{ws}/-logs {p('log')}/train-{{attempt}}.log"
        self.cache = f"{ws}/-cache {p('cache')}"
        self.env_value = self.p("env")  # env values and the command may hold newlines
        self.pct = _symlink(lab.pct_path, f"{lab.dir}/-pct {p('pct')}/pct")
        self.smi = _symlink(lab.nvidia_smi, f"{lab.dir}/-smi {p('smi')}/nvidia-smi")
        self.py_spy = f"/nonexistent/-spy {p('spy')}"
        self.command = (f"printf %s \"$HOSTILE\" > env-seen.txt; : {shlex.quote(self.p('cmd'))}; "
                        f"exec {lab.jobsim_command('--steps', 0, '--interval', 0.1)}")
        for d in (self.workdir, self.cache + "/inductor"):
            _mkdir(d)

    def p(self, tag: str) -> str:
        return payload(self.marks, tag)

    def p1(self, tag: str) -> str:
        return payload(self.marks, tag, newline=False)

    def overrides(self, **job: Any) -> dict[str, Any]:
        return {
            # a target name is letters, digits, space and . _ - @ + : (checked at load): these the unit name cannot hold
            "target": {"name": "lab x@y:z+w.v_u-t", "pct": self.pct},
            "job": {"workdir": self.workdir, "log": self.log, "command": self.command,
                    "env": {"HOSTILE": self.env_value, "PLAIN": "1"}, "py_spy": self.py_spy,
                    "progress_pattern": r"^step \d+|" + re.escape(self.p("re")), **job},
            "deploy": {"dest": self.workdir},
            "cache": {"paths": [self.cache]},
            "gpu": {"nvidia_smi": self.smi},
        }

    def left(self) -> list[str]:
        """Every marker that appeared: absolute ones, and the relative one where a command's
        current directory may have been (in the container and on the host)."""
        found = [str(f) for f in self.marks.iterdir()]
        for root in (self.ws, str(self.lab.dir)):
            for dirpath, _dirs, files in os.walk(os.fsencode(root)):
                found += [os.fsdecode(os.path.join(dirpath, f)) for f in files if f == RELATIVE_MARK.encode()]
        inside = self.lab.exec_in(200, f"ls -a / /root /tmp 2>/dev/null | grep -x {RELATIVE_MARK}")
        found += [f"container:{x}" for x in inside.stdout.split()]
        found += [str(p) for p in (Path("/") / RELATIVE_MARK, Path.cwd() / RELATIVE_MARK, Path.home() / RELATIVE_MARK) if p.exists()]
        return found


def spy(transport: Any, sent: list[str]) -> None:
    """Record every command the real transport is asked to run (it still runs them)."""
    for name in ("run", "run_host", "run_channel"):
        real = getattr(transport, name)

        def make(real: Any) -> Any:
            async def recorded(command: str, **kw: Any) -> Any:
                sent.append(command)
                return await real(command, **kw)
            return recorded

        setattr(transport, name, make(real))


pytestmark_lab = pytest.mark.lab


@pytestmark_lab
async def test_every_remote_command_with_hostile_values_leaves_no_marker(lab, lab_config, engines) -> None:
    h = Hostile(lab)
    cfg = lab_config(**h.overrides())
    assert cfg.job.workdir == h.workdir and cfg.job.env["HOSTILE"] == h.env_value  # nothing was refused or changed
    eng = engines(cfg)
    sent: list[str] = []
    spy(eng.transport, sent)

    # deploy → stop and strays → clear-cache → launch → verify, through the real engine
    res = await eng.attempt(h.p("note"))
    fs = res.verdict.failed_stage
    assert res.outcome is Outcome.PASSED, (fs.name, fs.layer, fs.detail[-600:], fs.evidence) if fs else res.outcome
    # the values arrived intact: the job ran in the hostile workdir with the hostile env value
    seen = Path(os.fsdecode(os.path.join(os.fsencode(h.workdir), b"env-seen.txt")))
    assert seen.read_text() == h.env_value
    assert Path(cfg.log_path(res.attempt)).read_text().count("step") >= 1
    assert not Path(h.cache).exists()
    # every probe of the observer: processes, GPUs (a hostile nvidia-smi path), the log, the kernel log
    await eng.observer.refresh_procs()
    gpu = await eng.observer.refresh_gpu()
    assert gpu.snapshot is not None and gpu.snapshot.gpus and gpu.error is None, gpu.to_dict()

    async def log_read() -> bool:
        await eng.observer.refresh_log()
        f = eng.observer.log.follower
        return f is not None and bool(f.size)

    await await_for(log_read, timeout=10)
    await eng.observer.refresh_kmsg()
    # the single actions and the headless status
    assert (await eng.run_action("verify")).failed_stage is None
    dump = await eng.stacks()
    assert dump is not None and dump.method == "proc"  # the hostile py-spy path is not there: the kernel's view
    assert (await eng.run_action("clear-cache")).failed_stage is None
    status = await collect_status(cfg)  # its own engine: connectivity, reconcile, every probe
    assert status["ok"] and status["latest_attempt"] is not None and status["gpu"]["gpus"]
    assert (await eng.run_action("stop")).failed_stage is None
    rv = await eng.run_action("reboot")  # pct reached through a hostile path
    assert rv.failed_stage is None, rv.summary()

    kinds = {
        "workdir check": "test -d", "deploy upload": "tar -xzf", "deploy checksums": "sha256sum -z",
        "cache symlink check": "[ -L", "cache measure": "du -sk", "cache users": "/proc/[0-9]*/fd/*",
        "cache remove": "rm -rf --", "cache gone": "then echo 1; else echo 0", "strays": "grep -laF --",
        "launch prepare": "mv -f", "spawn": "setsid -f", "pid file": "cat /proc/$p/stat", "job state": "@@stat",
        "stacks": "@@t ", "py-spy lookup": "command -v", "stop": "kill -s TERM", "gpu": "--query-gpu",
        "processes": "/proc", "log probe": "tail -c", "kernel log": "dmesg", "pct status": " status 200",
        "pct reboot": " reboot 200",
    }
    missing = [k for k, needle in kinds.items() if not any(needle in c for c in sent)]
    assert missing == [], missing
    q = shlex.quote
    for value in (h.workdir, h.cache, h.py_spy, h.smi, h.pct, f"HOSTILE={h.env_value}", h.command):
        assert any(q(value) in c for c in sent), f"never interpolated: {value!r}"
    assert any(q(cfg.log_path(res.attempt)) in c for c in sent)
    assert h.left() == []


FAKE_SYSTEMD_RUN = """#!{python}
# systemd-run for the hostile-config test: records its argv, then does what systemd would
import os, sys
with open({argv_file!r}, "wb") as f:
    f.write(b"\\0".join(os.fsencode(a) for a in sys.argv))
args, env, props, i = sys.argv[1:], dict(os.environ), {{}}, 0
while args[i].startswith("-"):
    if args[i] == "-p":
        k, _, v = args[i + 1].partition("=")
        props[k] = v
        i += 2
        continue
    if args[i].startswith("--setenv="):
        k, _, v = args[i][len("--setenv="):].partition("=")
        env[k] = v
    i += 1
if os.fork() == 0:
    os.setsid()
    os.chdir(props["WorkingDirectory"])
    os.umask(int(props["UMask"], 8))
    fd = os.open("/dev/null", os.O_RDWR)
    for n in (0, 1, 2):
        os.dup2(fd, n)
    os.execve(args[i], args[i:], env)
"""


class WithPath:
    """The real transport, with a directory of stand-ins (systemd-run, systemctl) first on PATH."""

    def __init__(self, inner: Any, path: Path) -> None:
        self.inner, self.path = inner, path

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def run(self, command: str, *, timeout: float = 10.0) -> Any:
        return await self.inner.run(f"PATH={shlex.quote(str(self.path))}:$PATH; export PATH; {command}", timeout=timeout)


@pytestmark_lab
async def test_systemd_run_launch_and_stop_with_hostile_values(lab, lab_config, engines) -> None:
    h = Hostile(lab)
    cfg = lab_config(**h.overrides(launcher="systemd-run"))
    eng = engines(cfg)
    fake = lab.dir / "hostile-fakebin"
    fake.mkdir(exist_ok=True)
    argv_file = fake / "systemd-run.argv"
    argv_file.unlink(missing_ok=True)
    (fake / "systemd-run").write_text(FAKE_SYSTEMD_RUN.format(python=lab.jobsim_argv()[0], argv_file=str(argv_file)))
    (fake / "systemctl").write_text(f"#!/bin/sh\nprintf '%s\\0' \"$@\" > {shlex.quote(str(fake / 'systemctl.argv'))}\n")
    for f in ("systemd-run", "systemctl"):
        (fake / f).chmod(0o755)
    ctx = ActionContext(cfg, WithPath(eng.transport, fake))  # type: ignore[arg-type]
    v, job = await launch(ctx, 1)
    assert v.failed_stage is None and job is not None and job.unit, v.summary()
    argv = [os.fsdecode(a) for a in argv_file.read_bytes().split(b"\0")]
    # systemd-run received each value as one argument, exactly as configured
    assert f"--setenv=HOSTILE={h.env_value}" in argv and f"WorkingDirectory={h.workdir}" in argv
    assert argv[-1] == h.command and argv[-7:-5] == ["/bin/sh", "-c"] and argv[-4] == "cockpit-job"
    assert re.fullmatch(r"cockpit-[A-Za-z0-9_-]+-1-\d+", job.unit)  # the target name made safe for a unit
    await await_for(lambda: Path(os.fsdecode(os.path.join(os.fsencode(h.workdir), b"env-seen.txt"))).exists(), timeout=10)
    sv = await stop(ctx, job)
    assert sv.failed_stage is None, sv.summary()
    assert (fake / "systemctl.argv").read_bytes().split(b"\0")[:3] == [b"stop", b"--no-block", job.unit.encode()]
    assert h.left() == []


@pytestmark_lab
async def test_hostile_pct_path_fails_in_the_host_layer_and_runs_nothing(lab, lab_config, engines) -> None:
    h = Hostile(lab)
    cfg = lab_config(target={"pct": f"/nonexistent/-pct {h.p1('badpct')}"})
    eng = engines(cfg)
    v = await eng.run_action("deploy")
    assert v.failed_stage is not None and v.failed_stage.layer is Layer.HOST
    rv = await reboot(ActionContext(cfg, eng.transport))
    assert rv.failed_stage is not None and rv.failed_stage.layer is Layer.HOST
    assert h.left() == []


REFUSED = [
    # (section, key, value, the dotted key the error names, a word of the problem)
    ("job", "env", {"-S touch MARK": "x"}, "job.env", "not a variable name"),
    ("job", "env", {"A;touch MARK": "x"}, "job.env", "not a variable name"),
    ("job", "env", {"A\nB": "x"}, "job.env", "not a variable name"),
    ("target", "container", "200; touch MARK", "target.container", "must be a Proxmox CTID"),
    ("target", "user", "-oProxyCommand=touch MARK", "target.user", "ssh would read it as an option"),
    ("target", "host", "-oProxyCommand=touch MARK", "target.host", "ssh would read it as an option"),
    ("target", "host", "lab\ntouch MARK", "target.host", "control characters"),
    ("target", "port", "22; touch MARK", "target.port", "must be an integer"),
    ("job", "umask", "022; touch MARK", "job.umask", "octal umask"),
    ("job", "launcher", "setsid; touch MARK", "job.launcher", "is not one of"),
    ("job", "workdir", "$(touch MARK)", "job.workdir", "absolute path"),
    ("job", "log", "/w/$(touch MARK).log", "job.log", "{attempt}"),
    ("deploy", "dest", "-rf /", "deploy.dest", "absolute path"),
    ("cache", "paths", ["/tmp/x*; touch MARK"], "cache.paths[0]", "glob character"),
    ("cache", "paths", ["/home/./someone/"], "cache.paths[0]", "home directory"),
    ("job", "progress_pattern", "(unclosed $(touch MARK)", "job.progress_pattern", "regular expression"),
]


@pytest.mark.parametrize("section, key, value, dotted, problem", REFUSED, ids=[f"{r[3]}-{i}" for i, r in enumerate(REFUSED)])
def test_values_that_cannot_be_safe_are_refused_at_load(lab, tmp_path: Path, section: str, key: str, value: Any,
                                                        dotted: str, problem: str) -> None:
    path = tmp_path / "cockpit.toml"
    doc = lab.config_dict()
    doc[section][key] = value
    path.write_text(to_toml(doc))
    with pytest.raises(ConfigError) as e:
        load_config(path)
    err = e.value
    assert (err.path, err.key) == (str(path), dotted) and problem in err.problem and err.fix, err.message
    assert err.message.startswith(f"{path}: {dotted}: ") and "\n  fix: " in err.message

"""procs: the ps probe, both output formats, the tree, and the findings."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cockpit.core.layers import Layer, Severity
from cockpit.core.probes.procs import (
    PS_COMMAND,
    Proc,
    ProcTree,
    analyse,
    fmt_age,
    job_members,
    parse_ps,
    pid1_reaps,
    ps_command,
    ps_probe_findings,
)

FIX = Path(__file__).parent / "fixtures" / "procs"
LONG_TAIL = "x" * 9000 + "END"


def load(name: str) -> str:
    return (FIX / name).read_text(encoding="utf-8")


def by_pid(procs: list[Proc]) -> dict[int, Proc]:
    return {p.pid: p for p in procs}


# -- parsing the captured namespaces: both formats must agree ----------------------------------


@pytest.mark.parametrize("name", ["procs_procps_ns.txt", "procs_busybox_ns.txt"])
def test_captured_namespace(name: str) -> None:
    procs, bad = parse_ps(load(name))
    assert bad == []
    p = by_pid(procs)
    # PID 1 is `sleep` (does not reap), PPID 0
    assert p[1].comm == "sleep" and p[1].ppid == 0 and p[1].args == "sleep 600"
    # the trainer: multi-threaded session leader, unicode and double spaces intact
    trainer = p[2]
    assert trainer.state == "Ssl" and trainer.threads == 4 and trainer.pgid == 2
    assert "--name=données_日本語 --emoji=🚀 --note=two  spaces" in trainer.args
    # its unreaped child
    assert p[51].state == "Z" and p[51].ppid == 2 and p[51].args == "[python3] <defunct>"
    # Zl: leader exited, a thread still alive; comm with a space
    zl = p[54]
    assert zl.state == "Zl" and zl.comm == "drafter stuck" and zl.threads == 2
    assert zl.args == "[drafter stuck] <defunct>" and zl.is_zombie and zl.multithreaded
    # vfork parent in D
    assert p[57].code == "D" and p[57].wchan == "kernel_clone"
    # orphan zombie under PID 1
    assert p[60].is_zombie and p[60].ppid == 1
    # 9000-character args kept whole
    assert p[61].args.endswith("--long=" + LONG_TAIL)
    # the probe itself, entered from outside the namespace
    sh = next(x for x in procs if "@@cockpit-ps" in x.args and x.ppid == 0)
    assert sh.comm in ("sh", "busybox")


def test_formats_agree_on_common_fields() -> None:
    a = by_pid(parse_ps(load("procs_procps_ns.txt"))[0])
    b = by_pid(parse_ps(load("procs_busybox_ns.txt"))[0])
    for pid in (1, 2, 51, 52, 54, 57, 58, 60, 61, 154):
        x, y = a[pid], b[pid]
        assert (x.ppid, x.pgid, x.sid, x.comm, x.threads, x.user) == (y.ppid, y.pgid, y.sid, y.comm, y.threads, y.user)
        assert x.state.rstrip("+") == y.state.rstrip("+"), pid
        assert x.args == y.args, pid
        assert abs(x.rss_kb - y.rss_kb) <= 64


def test_seed_container() -> None:
    procs, bad = parse_ps(load("procs_seed_systemd.txt"))
    assert bad == []
    p = by_pid(procs)
    z = p[91451]
    assert z.state == "Zl" and z.cpu == 331.0 and z.elapsed_s == 1027 and z.threads == 5
    assert p[93010].ppid == 0
    assert p[61].comm == "systemd-journal"  # 15 columns exactly, no space before args


@pytest.mark.parametrize(
    "line, expected",
    [
        # comm with spaces, padded to 15 columns
        (
            "   7     1     7     7 Ss   5  0.0 100 1 -  root  tmux: server    tmux new -s train",
            ("tmux: server", "tmux new -s train"),
        ),
        # comm exactly 15 wide
        (
            "   8     1     8     8 S    5  0.0 100 1 -  root  systemd-journal /lib/systemd/systemd-journald",
            ("systemd-journal", "/lib/systemd/systemd-journald"),
        ),
        # wide characters: 5 CJK characters fill 10 columns, padded with 5 spaces
        ("   9     1     9     9 S    5  0.0 100 1 -  root  日本語テス      ./日本語テスト --x", ("日本語テス", "./日本語テスト --x")),
        # numeric user (name wider than the column)
        ("  10     1    10    10 S    5  0.0 100 1 -  100001 python3         python3 -u train.py", ("python3", "python3 -u train.py")),
    ],
)
def test_comm_and_args_split(line: str, expected: tuple[str, str]) -> None:
    procs, bad = parse_ps(line)
    assert bad == []
    assert (procs[0].comm, procs[0].args) == expected


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "\n\n",
        "ps: unknown option -- w",
        "  1  0  0  0 S 5 0.0",  # too short
        "  x  0  0  0 S 5 0.0 100 1 - root sh sh",  # pid not a number
        "  1  0  0  0 Q 5 0.0 100 1 - root sh sh",  # unknown state
        "  1  0  0  0 S 5 zz 100 1 - root sh sh",  # cpu not a number
        "P\tgarbage",
    ],
)
def test_garbage_is_reported_not_raised(garbage: str) -> None:
    procs, bad = parse_ps(garbage)
    assert procs == []
    assert len(bad) == (1 if garbage.strip() else 0)


def test_mixed_good_and_bad_lines() -> None:
    text = load("procs_seed_systemd.txt") + "this is not ps output\n   12 3\n"
    procs, bad = parse_ps(text)
    assert len(procs) == 6
    assert bad == ["this is not ps output", "   12 3"]


def test_duplicate_pid_reported() -> None:
    line = "   7     1     7     7 S    5  0.0 100 1 -  root  sh              sh -c x"
    procs, bad = parse_ps(line + "\n" + line)
    assert len(procs) == 1 and bad and "duplicate pid 7" in bad[0]


def test_bytes_input_and_invalid_utf8() -> None:
    raw = b"   7     1     7     7 S    5  0.0 100 1 -  root  sh              sh -c \xff\xfe\n"
    procs, bad = parse_ps(raw)
    assert bad == [] and procs[0].args == "sh -c \ufffd\ufffd"


# -- the tree --------------------------------------------------------------------------------


def test_tree_roots_and_walk() -> None:
    procs, _ = parse_ps(load("procs_procps_ns.txt"))
    tree = ProcTree(procs)
    roots = [p.pid for p in tree.roots]
    sh = next(p.pid for p in procs if "@@cockpit-ps" in p.args and p.ppid == 0)
    assert roots == [1, sh]  # PID 1 and the probe entered from outside (PPID 0)
    assert [c.pid for c in tree.children(2)] == [51]
    assert {d.pid for d in tree.descendants(1)} >= {2, 51, 52, 54, 57, 58, 60, 61}
    assert [a.pid for a in tree.ancestors(51)] == [2, 1]
    walked = list(tree.walk())
    assert len(walked) == len(procs)
    depth = {p.pid: d for d, p in walked}
    assert depth[1] == 0 and depth[2] == 1 and depth[51] == 2 and depth[58] == 2


def test_tree_survives_cycles_and_self_parents() -> None:
    mk = lambda pid, ppid: Proc(pid, ppid, pid, pid, "S", 1, 0.0, 1, "root", "x", "x")  # noqa: E731
    procs = [mk(10, 11), mk(11, 10), mk(12, 12), mk(13, 12)]
    tree = ProcTree(procs)
    assert [p.pid for p in tree.roots] == [12]
    assert {p.pid for _, p in tree.walk()} == {10, 11, 12, 13}
    assert len(tree.ancestors(10)) == 1  # 11, then the cycle stops
    assert {p.pid for p in tree.descendants(10)} == {11}


# -- findings --------------------------------------------------------------------------------


def kinds(findings) -> list[tuple[str, str]]:
    return [(f.kind, f.layer.value) for f in findings]


def test_seed_zombie_findings() -> None:
    procs, _ = parse_ps(load("procs_seed_systemd.txt"))
    f = analyse(procs)
    assert kinds(f) == [("zombie-threads", "container")]
    z = f[0]
    assert z.severity is Severity.ERROR
    assert "91451" in z.summary and "17m07s" in z.summary and "4 thread(s)" in z.summary
    assert z.subject["pid"] == 91451 and z.subject["parent_pid"] == 1
    assert z.subject["pid1_comm"] == "systemd" and z.subject["pid1_reaps"] is True
    assert "reboot the container" in z.advice


def test_namespace_findings() -> None:
    procs, _ = parse_ps(load("procs_procps_ns.txt"))
    f = analyse(procs)
    got = kinds(f)
    assert ("zombie-threads", "container") in got
    assert ("uninterruptible", "process") in got  # kernel_clone is not the NVIDIA driver
    plain = [x for x in f if x.kind == "zombie"]
    # grouped by parent: under the trainer 2, under the copy 52, under PID 1
    assert sorted(x.subject["ppid"] for x in plain) == [1, 2, 52]
    under1 = next(x for x in plain if x.subject["ppid"] == 1)
    assert under1.subject["pid1_reaps"] is False
    assert "never reaps" in under1.advice and "Reboot" in under1.advice
    under2 = next(x for x in plain if x.subject["ppid"] == 2)
    assert "has not called wait()" in under2.advice and "does not reap" in under2.advice


def test_job_marking_and_duplicates() -> None:
    procs, _ = parse_ps(load("procs_procps_ns.txt"))
    tree = ProcTree(procs)
    assert job_members(tree, job_pids=[2]) == {2, 51}
    assert job_members(tree, job_pgid=52) == {52, 154}
    cmd = next(p.args for p in procs if p.pid == 2)
    f = analyse(procs, job_pids=[2], job_pgid=2, job_command=cmd)
    dup = [x for x in f if x.kind == "duplicate-job"]
    assert [x.subject["pid"] for x in dup] == [52] and dup[0].layer is Layer.PROCESS
    jz = [x for x in f if x.kind == "zombie" and x.subject["job"]]
    assert [x.subject["pid"] for x in jz] == [51] and jz[0].severity is Severity.ERROR
    # the same command with a different interpreter path still counts as the same command line
    short = cmd.replace("/root/.pyenv/versions/3.11.7/bin/python3", "python3")
    assert [x.subject["pid"] for x in analyse(procs, job_pids=[2], job_command=short) if x.kind == "duplicate-job"] == [52]
    # nothing recorded: two copies of the command are flagged
    f2 = analyse(procs, job_command=cmd)
    assert sorted(x.subject["pid"] for x in f2 if x.kind == "duplicate-job") == [2, 52]


def test_job_missing() -> None:
    procs, _ = parse_ps(load("procs_seed_systemd.txt"))
    f = analyse(procs, job_pids=[4242])
    assert ("job-missing", "process") in kinds(f)
    # a job whose end is known (finished, stopped): its pid gone is that end, not a finding
    assert "job-missing" not in [x.kind for x in analyse(procs, job_pids=[4242], job_ended=True)]
    f = analyse(procs, job_pids=[91451])
    assert "job-missing" not in [x.kind for x in f]
    z = next(x for x in f if x.kind == "zombie-threads")
    assert z.subject["job"] is True and z.summary.endswith("the job")


def test_d_state_in_nvidia_driver_is_gpu() -> None:
    p = Proc(5, 1, 5, 5, "Dl", 600, 0.0, 1000, "root", "python3", "python3 train.py", threads=9, wchan="nv_wait_for_completion")
    f = analyse([p], job_pids=[5])
    assert kinds(f) == [("uninterruptible", "gpu")]
    assert f[0].severity is Severity.ERROR and "NVIDIA driver" in f[0].advice


def test_zombie_with_parent_outside_namespace() -> None:
    z = Proc(40, 0, 40, 40, "Z", 30, 0.0, 0, "root", "bash", "[bash] <defunct>")
    f = analyse([z])
    assert "outside this PID namespace" in f[0].summary and "pct exec" in f[0].advice


@pytest.mark.parametrize(
    "comm, args, expected",
    [
        ("systemd", "/sbin/init", True),
        ("init", "/sbin/init", True),
        ("tini", "/usr/bin/tini -- python3 train.py", True),
        ("dumb-init", "dumb-init python3 x.py", True),
        ("s6-svscan", "s6-svscan /run/service", True),
        ("catatonit", "catatonit -- x", True),
        ("supervisord", "/usr/bin/python3 /usr/bin/supervisord -n", True),
        ("sleep", "sleep infinity", False),
        ("python3.11", "python3.11 train.py", False),
        ("bash", "bash", None),
        ("weird", "weird", None),
    ],
)
def test_pid1_reaps(comm: str, args: str, expected: bool | None) -> None:
    assert pid1_reaps(Proc(1, 0, 1, 1, "Ss", 1, 0.0, 1, "root", comm, args)) is expected


def test_fmt_age() -> None:
    assert [fmt_age(s) for s in (0, 59, 1027, 7380, 273600, None)] == ["0s", "59s", "17m07s", "2h03m", "3d04h", "?"]
    # the UI's compact form is the same function, largest unit only
    assert [fmt_age(s, coarse=True) for s in (-3, 59.9, 1027, 7380, 273600)] == ["0s", "59s", "17m", "2h", "3d"]
    assert fmt_age(float("nan"), missing="—") == "—"


# -- the command itself, run for real ---------------------------------------------------------


def _run(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout


def test_command_runs_under_sh() -> None:
    out = _run(["sh", "-c", PS_COMMAND])
    assert out.startswith("@@cockpit-ps procps\n")
    procs, bad = parse_ps(out)
    assert bad == [] and any(p.comm == "ps" for p in procs)


@pytest.mark.skipif(shutil.which("busybox") is None, reason="busybox not installed")
def test_fallback_runs_under_busybox_without_procps(tmp_path: Path) -> None:
    bb = shutil.which("busybox")
    for applet in ("tr", "cat", "ps"):
        (tmp_path / applet).symlink_to(bb)
    out = subprocess.run(
        ["env", "-i", f"PATH={tmp_path}", bb, "sh", "-c", PS_COMMAND],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    assert out.startswith("@@cockpit-ps proc\n")  # busybox ps rejected the fields
    procs, bad = parse_ps(out)
    assert bad == []
    me = [p for p in procs if "@@cockpit-ps" in p.args]
    assert me and me[0].user and me[0].elapsed_s >= 0 and me[0].rss_kb > 0


def test_hung_ps_is_reported(tmp_path: Path) -> None:
    fake = tmp_path / "ps"
    fake.write_text("#!/bin/sh\nsleep 30\n")
    fake.chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    out = subprocess.run(["sh", "-c", ps_command(timeout=1)], capture_output=True, text=True, timeout=30, env=env).stdout
    assert out == "@@cockpit-ps timeout 1\n"
    procs, bad = parse_ps(out)
    assert procs == [] and bad == ["@@cockpit-ps timeout 1"]
    f = ps_probe_findings(out)
    assert [(x.kind, x.layer) for x in f] == [("ps-hung", Layer.CONTAINER)] and "1s" in f[0].summary
    assert ps_probe_findings(load("procs_seed_systemd.txt")) == []

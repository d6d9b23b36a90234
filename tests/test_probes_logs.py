"""logs: the log probe command against real files, the follower state machine, sanitising."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cockpit.core.probes.logs import LOG_MARK, LogFollowerState, LogRing, LogUpdate, log_probe_command, sanitize

SHELLS = [["sh", "-c"]] + ([["busybox", "sh", "-c"]] if shutil.which("busybox") else [])


class Follower:
    """Runs the real probe command through a real shell, with a fake clock."""

    def __init__(self, path: Path, shell: list[str] | None = None, max_bytes: int = 1 << 20, **kw):
        self.state = LogFollowerState(str(path), **kw)
        self.shell = shell or ["sh", "-c"]
        self.max_bytes = max_bytes
        self.now = 1000.0

    def probe(self, dt: float = 1.0) -> LogUpdate:
        self.now += dt
        out = subprocess.run(self.shell + [self.state.command(self.max_bytes)], capture_output=True, timeout=30).stdout
        return self.state.apply(out, self.now)

    def drain(self) -> LogUpdate:
        """Probe until nothing more is waiting; merge the updates."""
        total = LogUpdate()
        for _ in range(1000):
            u = self.probe(0.0)
            total.events += u.events
            total.lines += u.lines
            total.matches += u.matches
            if not u.more:
                return total
        raise AssertionError("follower never caught up")


def kinds(u: LogUpdate) -> list[str]:
    return [e.kind for e in u.events]


@pytest.fixture(params=SHELLS, ids=lambda s: s[0])
def shell(request) -> list[str]:
    return request.param


def test_missing_then_appears(tmp_path: Path, shell) -> None:
    log = tmp_path / "train.log"
    f = Follower(log, shell)
    u = f.probe()
    assert kinds(u) == ["missing"] and u.lines == [] and f.state.exists is False
    f.probe(4.0)
    assert f.state.missing_for_s(f.now) == pytest.approx(4.0)
    log.write_bytes(b"loading model\nstep 1 loss 2.0\n")
    u = f.probe(2.0)
    assert kinds(u) == ["appeared"] and "after 6.0s" in u.events[0].detail
    assert u.lines == ["loading model", "step 1 loss 2.0"]
    assert f.state.missing_for_s(f.now) is None and f.state.offset == 30
    assert f.state.idle_for_s(f.now + 5) == pytest.approx(5.0)


def test_partial_line_waits_for_its_newline(tmp_path: Path, shell) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"step 1\nstep 2 lo")
    f = Follower(log, shell)
    assert f.probe().lines == ["step 1"]
    assert f.state.partial_line == "step 2 lo"
    with log.open("ab") as fh:
        fh.write(b"ss 2.1\nstep 3")
    assert f.probe().lines == ["step 2 loss 2.1"]
    with log.open("ab") as fh:
        fh.write("é\n".encode())  # a multi-byte character split across reads is fine too
    assert f.probe().lines == ["step 3é"]


def test_multibyte_character_split_between_probes(tmp_path: Path, shell) -> None:
    log = tmp_path / "train.log"
    data = "日本語のログ\n".encode()
    log.write_bytes(data)
    f = Follower(log, shell, max_bytes=4)  # cuts inside a character
    u = f.drain()
    assert u.lines == ["日本語のログ"]


def test_truncation(tmp_path: Path, shell) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"old run line 1\nold run line 2\n")
    f = Follower(log, shell)
    f.probe()
    log.write_bytes(b"new\n")  # `> train.log`: same inode, smaller
    u = f.drain()
    assert kinds(u) == ["truncated"] and u.lines == ["new"] and f.state.offset == 4


def test_rewritten_in_place_past_the_old_offset(tmp_path: Path, shell) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"attempt 1: step 1 loss 9.9\n")
    f = Follower(log, shell)
    f.probe()
    ino = log.stat().st_ino
    with log.open("r+b") as fh:  # truncated and rewritten longer before the next poll
        fh.truncate(0)
        fh.write(b"attempt 2: loading the target model\nattempt 2: step 1\n")
    assert log.stat().st_ino == ino
    u = f.drain()
    assert kinds(u) == ["rewritten"]
    assert u.lines == ["attempt 2: loading the target model", "attempt 2: step 1"]


def test_replacement_flushes_the_old_partial_line(tmp_path: Path, shell) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"old 1\nold partial")
    f = Follower(log, shell)
    assert f.probe().lines == ["old 1"]
    new = tmp_path / "train.log.new"
    new.write_bytes(b"fresh 1\nfresh 2\n")
    os.replace(new, log)  # logrotate / a new file under the same name
    u = f.drain()
    assert kinds(u) == ["replaced"]
    assert u.lines == ["old partial", "fresh 1", "fresh 2"]


def test_deletion_then_recreation(tmp_path: Path, shell) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"a\n")
    f = Follower(log, shell)
    f.probe()
    log.unlink()
    u = f.probe(3.0)
    assert kinds(u) == ["deleted"] and f.state.exists is False
    assert f.state.missing_for_s(f.now + 2) == pytest.approx(2.0)
    log.write_bytes(b"b\n")
    u = f.probe()
    assert kinds(u) == ["appeared"] and u.lines == ["b"]


def test_invalid_utf8_nul_and_ansi(tmp_path: Path, shell) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"\x1b[32mINFO\x1b[0m ok \xff\xfe end\nnul\x00byte\nbell\x07 esc\x1b alone\r\n")
    u = Follower(log, shell).probe()
    assert u.lines == ["INFO ok \ufffd\ufffd end", "nul\u2400byte", "bell\u2407 esc\u241b alone"]
    assert not any("\x1b" in line or "\x00" in line for line in u.lines)


def test_five_megabyte_line(tmp_path: Path, shell) -> None:
    log = tmp_path / "train.log"
    big = b"A" * (5 * 1024 * 1024)
    log.write_bytes(b"before\n" + big + b"\nafter\n")
    f = Follower(log, shell, max_line_bytes=16 * 1024, initial_tail_bytes=None)
    u = f.drain()
    assert u.lines[0] == "before" and u.lines[2] == "after"
    cut = u.lines[1]
    assert cut.startswith("A" * 16384) and cut.endswith(f" … [{len(big) - 16384} bytes cut]")
    assert len(cut) < 16384 + 40
    assert f.state.offset == log.stat().st_size  # offsets count every byte
    assert "line-cut" in kinds(u)


def test_big_existing_log_starts_near_its_end(tmp_path: Path, shell) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"".join(b"step %06d\n" % i for i in range(20000)))  # 240 000 bytes
    f = Follower(log, shell, initial_tail_bytes=1000)
    u = f.drain()
    assert kinds(u)[:2] == ["appeared", "skipped"]
    assert u.lines[-1] == "step 019999" and len(u.lines) in (82, 83)
    assert all(line.startswith("step ") and len(line) == 11 for line in u.lines)  # no torn first line


def test_lines_reach_the_classifier(tmp_path: Path, shell) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(
        b"step 1\nTraceback (most recent call last):\n  File \"t.py\", line 1\n"
        b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    )
    f = Follower(log, shell)
    u = f.drain()
    assert [m.kind for m in u.matches] == ["cuda-oom"]
    assert f.state.classifier.final_error.traceback[0] == "Traceback (most recent call last):"
    assert f.state.ring.total == 4


# -- synthetic outputs: the parts a real shell rarely produces -----------------------------------


def framed(inode: str, size: int, start: int, data: bytes, count: int | None = None) -> bytes:
    n = len(data) if count is None else count
    return f"{LOG_MARK} ok {inode} {size} {start} {n}\n".encode() + data + b"\n" + f"{LOG_MARK} end\n".encode()


def test_short_read_uses_the_trailer() -> None:
    s = LogFollowerState("/x", overlap=0)
    u = s.apply(framed("7", 100, 0, b"abc\nde", count=100), 1.0)  # file shrank while read
    assert u.lines == ["abc"] and s.offset == 6


@pytest.mark.parametrize(
    "out",
    [b"", b"garbage\n", f"{LOG_MARK} ok 1 x 0 0\n".encode(), f"{LOG_MARK} ok 1 10 0 5\nabc".encode(), f"{LOG_MARK} weird\n".encode()],
)
def test_bad_outputs_are_events(out: bytes) -> None:
    s = LogFollowerState("/x")
    u = s.apply(out, 1.0)
    assert kinds(u) == ["probe-error"] and s.offset == 0


def test_noise_before_the_header_is_skipped() -> None:
    s = LogFollowerState("/x", overlap=0)
    u = s.apply(b"Welcome to Ubuntu\n" + framed("7", 3, 0, b"ok\n"), 1.0)
    assert u.lines == ["ok"]


def test_output_for_another_offset_is_ignored() -> None:
    s = LogFollowerState("/x", overlap=0)
    s.apply(framed("7", 4, 0, b"abc\n"), 1.0)
    u = s.apply(framed("7", 8, 0, b"abc\ndef\n"), 2.0)  # built before the offset moved
    assert u.lines == [] and u.more and s.offset == 4


def test_not_a_file_and_unreadable_reported_once() -> None:
    s = LogFollowerState("/x")
    assert kinds(s.apply(f"{LOG_MARK} notfile\n".encode(), 1.0)) == ["not-a-file"]
    assert kinds(s.apply(f"{LOG_MARK} notfile\n".encode(), 2.0)) == []
    assert kinds(s.apply(f"{LOG_MARK} unreadable\n".encode(), 3.0)) == ["unreadable"]


def test_flush_partial_on_exit() -> None:
    s = LogFollowerState("/x", overlap=0)
    s.apply(framed("7", 9, 0, b"a\nno newl"), 1.0)
    u = s.flush_partial()
    assert u.lines == ["no newl"] and s.partial_line == ""


def test_events_are_bounded() -> None:
    s = LogFollowerState("/x", max_events=3)
    for i in range(10):
        s.apply(b"junk", float(i))
    assert len(s.events) == 3


def test_command_quotes_the_path() -> None:
    cmd = log_probe_command("/work/a b's;rm -rf ~.log", 100, 4096, overlap=64)
    assert "_cl_p='/work/a b'\"'\"'s;rm -rf ~.log'" in cmd
    assert "tail -c +37 " in cmd and "_cl_n=4160" in cmd
    assert "_cl_p=./-x.log;" in log_probe_command("-x.log", 0, 10)


# -- sanitize and the ring ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, clean",
    [
        ("plain step 1 loss 2.0", "plain step 1 loss 2.0"),
        ("\x1b[1;31mERROR\x1b[0m boom", "ERROR boom"),
        ("\x1b]0;title\x07text", "text"),
        ("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),
        (" 10%|█         | 10/100\r 50%|█████     | 50/100\r100%|██████████| 100/100", "100%|██████████| 100/100"),
        ("windows line\r", "windows line"),
        ("nul\x00 del\x7f c1\x9b31m x", "nul\u2400 del\u2421 c1 x"),
        ("c1 alone \x85 here", "c1 alone \\x85 here"),
        ("lone esc \x1b", "lone esc \u241b"),
        ("bidi \u202eevil", "bidi \\u202eevil"),
        ("tab\tkept", "tab\tkept"),
        ("\x1b(Bcharset", "charset"),
    ],
)
def test_sanitize(raw: str, clean: str) -> None:
    assert sanitize(raw) == clean


def test_ring() -> None:
    r = LogRing(maxlen=3)
    r.extend(["a", "b"])
    r.append("c")
    r.append("d")
    assert list(r) == ["b", "c", "d"] and r.total == 4 and r.first_line_no == 2
    assert r.tail(2) == ["c", "d"] and r.tail(0) == [] and r.tail(10) == ["b", "c", "d"] and r[0] == "b"
    r.clear()
    assert len(r) == 0 and r.total == 4

"""Driving the real ``cockpit`` TUI in a detached tmux server, for the benchmarks that need a
terminal (``bench_log_pane.py``, ``soak.py``).

A local-transport target in a temp dir whose job writes training-log lines at a given rate
(:data:`GEN_SCRIPT`, :func:`write_target`); the TUI started in tmux (:func:`start_tui`), read with
``tmux capture-pane``, driven with ``send-keys`` (:class:`Tmux`); its RSS and CPU read from /proc;
everything it started ended afterwards (:func:`cleanup`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLK_TCK = os.sysconf("SC_CLK_TCK")

#: the job: paced writes of training-log lines to stdout (cockpit captures them into the log)
GEN_SCRIPT = r'''
import json, math, random, sys, time
rate, seconds, warn_every, stats = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
out = sys.stdout
rnd = random.Random(1234)
print("loading tokenizer from /workspace/tok.model", flush=True)
print("model: 1.3B params, bf16, world_size 1, micro_batch 8, seq_len 2048", flush=True)
t0 = time.monotonic()
step = lines = warns = 0
tick = 0.01
while True:
    el = time.monotonic() - t0
    if el >= seconds:
        break
    due = int(el * rate) - lines
    if due > 0:
        buf = []
        for _ in range(due):
            lines += 1
            if warn_every and lines % warn_every == 0:
                warns += 1
                if warns % 2:
                    buf.append(f"/opt/venv/lib/python3.11/site-packages/torch/optim/lr_scheduler.py:143: UserWarning: "
                               f"Detected call of `lr_scheduler.step()` before `optimizer.step()` (step {step})")
                else:
                    buf.append(f"W{time.strftime('%m%d %H:%M:%S')}.{rnd.randint(0, 999999):06d} 4242 torch/_dynamo/convert_frame.py:844] "
                               f"[0/{warns % 8}] torch._dynamo hit config.cache_size_limit (8) at step {step}: grad norm {rnd.uniform(8, 40):.2f}")
                continue
            step += 1
            loss = 2.2 + 1.8 * math.exp(-step / 40000) + rnd.uniform(-0.05, 0.05)
            lr = 3e-4 * min(1.0, step / 2000)
            buf.append(f"step {step} | loss {loss:.4f} | lr {lr:.3e} | grad_norm {rnd.uniform(0.4, 2.5):.3f} | "
                       f"tokens/s {rnd.randint(118000, 131000)} | mem 61.{rnd.randint(0, 9)}GiB | elapsed {el:.2f}s")
        out.write("\n".join(buf) + "\n")
        out.flush()
    nxt = t0 + (math.floor((time.monotonic() - t0) / tick) + 1) * tick
    time.sleep(max(0.0, nxt - time.monotonic()))
el = time.monotonic() - t0
lines += 1
out.write(f"training finished: {step} steps, {lines} lines in {el:.2f}s\n")
out.flush()
with open(stats, "w") as fh:
    json.dump({"steps": step, "lines": lines + 2, "warnings": warns, "seconds": el}, fh)
'''

STEP_RE = re.compile(r"\bstep (\d+) \| loss\b")
HELP_MARK = "cockpit help"
PROMPT_MARK = "Attempt a fix"
READY_MARK = "log [2]"


# ------------------------------------------------------------------------------------------------
# small helpers

def toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string of printable text is a TOML basic string


class Deadline(Exception):
    pass


def wait_for(pred, timeout: float, what: str, interval: float = 0.05):
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            raise Deadline(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def proc_stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command may contain spaces and parentheses: fields start after the last ')'
    return [raw[: raw.rindex(")") + 1]] + raw[raw.rindex(")") + 2:].split()


def cpu_ticks(pid: int, children: bool = False) -> int | None:
    st = proc_stat(pid)
    if st is None:
        return None
    # after the name: [1]=state ... utime is field 14 overall → index 12 here; stime 13; cutime 14; cstime 15
    t = int(st[12]) + int(st[13])
    if children:
        t += int(st[14]) + int(st[15])
    return t


def rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def all_procs() -> dict[int, tuple[int, int]]:
    """pid → (ppid, session id)."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        st = proc_stat(int(d))
        if st is not None:
            out[int(d)] = (int(st[2]), int(st[4]))
    return out


def descendants(root: int) -> list[int]:
    procs = all_procs()
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _) in procs.items():
        kids.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        for c in kids.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope (units per second)."""
    if len(points) < 2:
        return float("nan")
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else float("nan")


# ------------------------------------------------------------------------------------------------
# the tmux session

class Tmux:
    def __init__(self, sock: str, env: dict[str, str]) -> None:
        self.sock, self.env = sock, env
        self.target = "bench"

    def cmd(self, *args: str, check: bool = True) -> str:
        r = subprocess.run(["tmux", "-L", self.sock, *args], capture_output=True, text=True, env=self.env, timeout=10)
        if check and r.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def capture(self) -> str:
        return self.cmd("capture-pane", "-p", "-t", self.target, check=False)

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.cmd("send-keys", "-t", self.target, *(["-l"] if literal else []), *keys)

    def pane_pid(self) -> int:
        return int(self.cmd("list-panes", "-t", self.target, "-F", "#{pane_pid}").split()[0])

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True, env=self.env, timeout=10)


def pane_step(screen: str) -> int | None:
    steps = [int(m.group(1)) for m in STEP_RE.finditer(screen)]
    return max(steps) if steps else None


# ------------------------------------------------------------------------------------------------
# setup

def write_target(root: Path, args: argparse.Namespace) -> tuple[Path, Path, Path, str]:
    src, ws, logs = root / "src", root / "workspace", root / "workspace" / "logs"
    for d in (src, logs, root / "cache" / "compile", root / "xdg-config", root / "xdg-cache"):
        d.mkdir(parents=True, exist_ok=True)
    (src / "gen_train_log.py").write_text(GEN_SCRIPT.lstrip())
    stats = root / "gen_stats.json"
    command = " ".join(shlex.quote(x) for x in (sys.executable, "gen_train_log.py", str(args.rate), str(args.seconds),
                                                 str(args.warn_every), str(stats)))
    cfg = root / "cockpit.toml"
    cfg.write_text(f"""\
[target]
name = "bench"
transport = "local"
runtime = "none"

[job]
workdir = {toml_str(str(ws))}
command = {toml_str(command)}
log = {toml_str(str(logs / "train-{attempt}.log"))}
launcher = "setsid"
progress_pattern = '^step'
startup_timeout = 30
healthy_after = 10
stop_timeout = 3

[job.env]
PYTHONUNBUFFERED = "1"
PYTHONDONTWRITEBYTECODE = "1"

[deploy]
source = {toml_str(str(src))}
dest = {toml_str(str(ws))}

[cache]
paths = [{toml_str(str(root / "cache" / "compile"))}]

[gpu]
enabled = false

[ui]
refresh_interval = 2
log_lines = {args.log_lines}

[journal]
path = {toml_str(str(root / "journal.jsonl"))}
""")
    return cfg, logs / "train-1.log", stats, "gen_train_log.py"


def check_config(cfg_path: Path) -> None:
    sys.path.insert(0, str(REPO))
    from cockpit.core.config import parse_config

    parse_config(cfg_path.read_text(), path=cfg_path)



def start_tui(root: Path, cfg: Path, width: int, height: int, sock_prefix: str = "bench") -> tuple[Tmux, dict[str, str], int, str]:
    """The TUI for ``cfg`` in a detached tmux server of its own, drawn: (tmux, env, TUI pid, TERM)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX", "TMUX_PANE")}
    env.update(XDG_CONFIG_HOME=str(root / "xdg-config"), XDG_CACHE_HOME=str(root / "xdg-cache"),
               PYTHONPATH=str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""))
    term = "tmux-256color" if subprocess.run(["infocmp", "tmux-256color"], capture_output=True).returncode == 0 else "screen-256color"
    conf = root / "tmux.conf"
    conf.write_text(f'set -g default-terminal "{term}"\nset -g status off\nset -g history-limit 100\n')
    sock = f"{sock_prefix}-{os.getpid()}"
    tmux = Tmux(sock, env)
    tui_cmd = "exec env -u COLUMNS -u LINES " + " ".join(shlex.quote(x) for x in (sys.executable, "-m", "cockpit", "-c", str(cfg)))
    subprocess.run(["tmux", "-L", sock, "-f", str(conf), "new-session", "-d", "-s", "bench", "-x", str(width), "-y", str(height),
                    "-c", str(REPO), tui_cmd], check=True, env=env, timeout=10)
    return tmux, env, tmux.pane_pid(), term


def cleanup(tmux: Tmux, cfg: Path, env: dict[str, str], root: Path, tui: int, gen_marker: str, keep: bool) -> None:
    known = set(descendants(tui)) if tui else set()
    tmux.kill()
    r = subprocess.run([sys.executable, "-m", "cockpit", "stop", "-c", str(cfg)], capture_output=True, text=True, env=env,
                       cwd=str(REPO), timeout=120)
    print(f"\ncleanup: tmux server killed; `cockpit stop` exit {r.returncode}: "
          f"{(r.stdout.strip().splitlines() or ['(no output)'])[0]}")
    # anything the TUI started that outlived it (session shell, reaper, the job) is ours to end
    deadline = time.monotonic() + 5
    left = []
    while time.monotonic() < deadline:
        left = [p for p in known if Path(f"/proc/{p}").exists() and (gen_marker in cmdline(p) or "cockpit" in cmdline(p))]
        if not left:
            break
        time.sleep(0.1)
    for p in left:
        print(f"cleanup: pid {p} outlived the TUI ({cmdline(p).strip()[:100]}): killing it")
        try:
            os.kill(p, 9)
        except OSError:
            pass
    if keep:
        print(f"cleanup: kept {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)

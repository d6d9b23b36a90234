"""How long one probe into the container takes: persistent session vs. a fresh `ssh … pct exec`.

Starts the lab (real sshd on 127.0.0.1, emulated Proxmox container 200), then measures in the
same run:

* baseline: ``ssh -p PORT root@127.0.0.1 pct exec 200 -- true`` as a fresh OpenSSH process each
  time (what the seed story did for every check);
* a new channel per probe on an open asyncssh connection (``conn.run("pct exec 200 -- true")``);
* cockpit's persistent framed session (``transport.run("true")``), watched (``timeout`` + ``sh -c``),
  cheap (``cheap=True``: a subshell of the session shell, no watchdog forked) and inline
  (``session.run(..., inline=True)``: in the session shell itself, no fork);
* a small real answer inline and cheap: ``read -r`` of ``/proc/self/stat`` (about 300 bytes);
* pipelined: :data:`PIPE` inline probes written in one go (``session.run_many``), per probe;
* the floor: a bare ``echo`` written to the same open session shell and its line read back;
* the process probe (``PS_COMMAND``) watched and cheap.

Prints medians and p90s in milliseconds and the ratios to the baseline.  Usage::

    python bench/bench_probe.py [--n 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cockpit.core.config import load_config
from cockpit.core.probes.procs import PS_COMMAND  # noqa: E402
from cockpit.core.remote import make_transport  # noqa: E402
from cockpit.core.runtimes import runtime_for  # noqa: E402
from tests.lab import Lab  # noqa: E402

#: probes per round trip in the pipelined rows
PIPE = 10
#: a small real answer: the session shell's own /proc/PID/stat, read with a built-in
STAT = 'read -r x </proc/self/stat; printf "%s\\n" "$x"'


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def show(name: str, xs: list[float], base: float | None) -> float:
    med = statistics.median(xs) * 1000
    ratio = f"{base / med:8.1f}x faster" if base else "  baseline"
    print(f"{name:<44} median {med:8.2f} ms   p90 {pct(xs, 0.9) * 1000:8.2f} ms  {ratio}")
    return med


async def main(n: int, fresh_n: int | None = None) -> None:
    with Lab() as lab:
        lab.add_container(200)
        cfg_path = Path(tempfile.mkdtemp()) / "cockpit.toml"
        lab.write_config(cfg_path)
        cfg = load_config(cfg_path)

        fresh = []
        for _ in range(fresh_n or max(10, n // 10)):
            t0 = time.perf_counter()
            subprocess.run(lab.ssh_argv("pct exec 200 -- true"), check=True, stdin=subprocess.DEVNULL, capture_output=True)
            fresh.append(time.perf_counter() - t0)

        tr = make_transport(cfg, runtime_for(cfg))
        conn = await tr.connect()
        chan = []
        for _ in range(n // 2):
            t0 = time.perf_counter()
            await conn.run("pct exec 200 -- true", check=True)
            chan.append(time.perf_counter() - t0)

        await tr.run("true")  # start the session
        session = tr.session
        sess, cheap, inline, bare, ps_w, ps_c = [], [], [], [], [], []
        stat_c, stat_i, pipe_i, pipe_c = [], [], [], []
        sh = session._sh  # the floor: one bare command written to the same shell, its line read back
        assert sh is not None
        for _ in range(n):  # interleaved, so a loaded machine weighs on every figure alike
            t0 = time.perf_counter()
            r = await tr.run("true")
            sess.append(time.perf_counter() - t0)
            assert r.exit_code == 0
            t0 = time.perf_counter()
            r = await tr.run("true", cheap=True)
            cheap.append(time.perf_counter() - t0)
            assert r.exit_code == 0
            t0 = time.perf_counter()
            r = await session.run("true", inline=True)
            inline.append(time.perf_counter() - t0)
            assert r.exit_code == 0
            t0 = time.perf_counter()
            r = await session.run(STAT, cheap=True)
            stat_c.append(time.perf_counter() - t0)
            assert r.exit_code == 0 and r.stdout.endswith(b"\n")
            t0 = time.perf_counter()
            r = await session.run(STAT, inline=True)
            stat_i.append(time.perf_counter() - t0)
            assert r.exit_code == 0 and r.stdout.endswith(b"\n")
            t0 = time.perf_counter()
            rs = await session.run_many(["true"] * PIPE, inline=True)
            pipe_i.append((time.perf_counter() - t0) / PIPE)
            assert all(r.exit_code == 0 for r in rs)
            t0 = time.perf_counter()
            rs = await session.run_many(["true"] * PIPE, cheap=True)
            pipe_c.append((time.perf_counter() - t0) / PIPE)
            assert all(r.exit_code == 0 for r in rs)
            t0 = time.perf_counter()
            await sh.proc.write(b"echo @@bare\n")
            assert (await sh.reader.readline(64)) == b"@@bare\n"
            bare.append(time.perf_counter() - t0)
        for _ in range(max(10, n // 4)):
            t0 = time.perf_counter()
            await tr.run(PS_COMMAND)
            ps_w.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await tr.run(PS_COMMAND, cheap=True)
            ps_c.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        await asyncio.gather(*[tr.run("true") for _ in range(50)])
        burst = time.perf_counter() - t0
        await tr.close()

    print(f"probe into emulated container 200 over real OpenSSH on 127.0.0.1 (n={n})")
    base = show("fresh `ssh host pct exec 200 -- true`", fresh, None)
    show("new channel on an open connection", chan, base)
    show("persistent framed session, watched", sess, base)
    show("persistent framed session, cheap=True", cheap, base)
    show("persistent framed session, inline=True", inline, base)
    show("/proc/PID/stat read, cheap=True", stat_c, base)
    show("/proc/PID/stat read, inline=True", stat_i, base)
    show(f"{PIPE} pipelined probes, inline, per probe", pipe_i, base)
    show(f"{PIPE} pipelined probes, cheap, per probe", pipe_c, base)
    show("floor: bare `echo` over the same shell", bare, base)
    show("process probe, watched", ps_w, base)
    show("process probe, cheap=True (what refresh uses)", ps_c, base)
    print(f"{'50 concurrent probes through the session':<44} total  {burst * 1000:8.2f} ms")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    asyncio.run(main(ap.parse_args().n))

"""Re-record the torch.compile trace fixtures (``tests/fixtures/torch_trace/<case>/``).

Runs each job of ``tests/lab/torch_jobs/`` with ``TORCH_TRACE`` set, on the CPU, and copies the
trace files it writes into the case's fixture folder, with a ``VERSION`` file naming the torch that
made them.  Needs a Python with torch (``--python``, default: ``$COCKPIT_TORCH_PYTHON`` if set, else
this interpreter); it takes about a minute.

A file over ``--max-bytes`` (200 KB) is trimmed and stays a valid trace: every envelope line is
kept, and a payload longer than 40 lines keeps its first 40 lines followed by one line
``<trimmed N lines>`` (tab-indented like the payload).  The payloads cut this way are graphs,
generated code and chromium events; the reasons cockpit reads are a few lines each.

    python -m tests.lab.record_torch_traces [--python PY] [--only CASE ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JOBS = ROOT / "tests" / "lab" / "torch_jobs"
OUT = ROOT / "tests" / "fixtures" / "torch_trace"
#: case -> job script; the two cache cases share an inductor cache dir (cold first, then warm)
CASES = {
    "recompile_storm": "recompile_storm.py",
    "graph_break": "graph_break.py",
    "thread_race": "thread_race.py",
    "cache_cold": "cache_cold_warm.py",
    "cache_warm": "cache_cold_warm.py",
    "compile_failure": "compile_failure.py",
    "two_ranks": "two_ranks.py",
}
KEEP_PAYLOAD_LINES = 40


def trim(text: str, keep: int = KEEP_PAYLOAD_LINES) -> str:
    """Cut each payload (the tab-indented lines after an envelope) to ``keep`` lines plus a marker."""
    out: list[str] = []
    run: list[str] = []

    def close() -> None:
        if len(run) > keep:
            out.extend(run[:keep])
            out.append(f"\t<trimmed {len(run) - keep} lines>")
        else:
            out.extend(run)
        run.clear()

    for line in text.splitlines():
        if line.startswith("\t"):
            run.append(line)
        else:
            close()
            out.append(line)
    close()
    return "\n".join(out) + "\n"


def record(case: str, python: str, cache_dir: Path, max_bytes: int) -> list[tuple[str, int, int]]:
    """Run one case; return (file, raw bytes, stored bytes) for each trace file written."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, TORCH_TRACE=tmp, TORCHINDUCTOR_CACHE_DIR=str(cache_dir))
        subprocess.run([python, str(JOBS / CASES[case])], env=env, check=True, cwd=JOBS, timeout=600,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dest = OUT / case
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        made = []
        for path in sorted(Path(tmp).glob("dedicated_log_torch_trace_*.log")):
            text = path.read_text()
            raw = len(text.encode())
            if raw > max_bytes:
                text = trim(text)
            (dest / path.name).write_text(text)
            made.append((path.name, raw, len(text.encode())))
        version = subprocess.run([python, "-c", "import torch, sys; print(torch.__version__, sys.version.split()[0])"],
                                 capture_output=True, text=True, check=True).stdout.split()
        (dest / "VERSION").write_text(f"torch {version[0]}\npython {version[1]}\njob tests/lab/torch_jobs/{CASES[case]}\n")
        return made


def main() -> int:
    default_py = os.environ.get("COCKPIT_TORCH_PYTHON") or sys.executable
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default=default_py)
    ap.add_argument("--only", nargs="*", choices=sorted(CASES))
    ap.add_argument("--max-bytes", type=int, default=200_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as caches:
        for case in CASES:
            if args.only and case not in args.only:
                continue
            # a fresh inductor cache for every case but cache_warm, which reuses cache_cold's
            cache = Path(caches) / ("cache_cold" if case in ("cache_cold", "cache_warm") else case)
            for name, raw, stored in record(case, args.python, cache, args.max_bytes):
                print(f"{case}/{name}: {raw} bytes" + (f", trimmed to {stored}" if stored != raw else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

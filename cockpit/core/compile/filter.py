'''The target-side filter of torch's structured trace: what crosses the link.

The trace is large (graphs, generated code, chromium events, guards: hundreds of KB per compile),
and cockpit needs a few envelopes of it.  :data:`FILTER_SCRIPT` is a self-contained Python 3
program (stdlib only, Python 3.6 or later, as found inside a training container) that follows every
``dedicated_log_torch_trace_*.log`` of a directory, new files too, and writes to stdout one compact
line per envelope cockpit reads:

- ``dynamo_start`` (the stack's file numbers resolved; the ``str`` table itself is not sent),
- ``compilation_metrics`` and ``bwd_compilation_metrics`` (``dynamo_config`` replaced by the
  recompile limits it holds, the other ``*_config`` texts dropped, strings cut to
  :data:`PAYLOAD_CAP`, lists to 16 items),
- the ``artifact`` s ``recompile_reasons``, ``dynamo_graph_break_reason``, ``dynamo_error`` and
  ``torch_version`` with their payload (capped), and every ``*_cache_hit/miss/bypass`` (payload dropped).

Each output line keeps the glog prefix, so :class:`~cockpit.core.compile.trace.TraceParser` reads it;
the payload and the file it came from ride in the envelope under ``"cockpit"``.

Run it as ``python3 -c "$FILTER_SCRIPT" DIR`` (follows until killed; once it has read what the
directory held when it started it writes :data:`CAUGHT_UP`, alone on a line, once) or with ``--once``
(reads what is there, then exits); ``--interval=S`` sets the polling period (0.5 s), ``--chunk=N`` the most
bytes read from one file per poll (4 MiB), so memory stays small behind a big trace.  :func:`filter_text` runs the same code in this process (the script's text
is executed, not copied), so the tests compare the two.
'''

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from typing import cast

PAYLOAD_CAP = 2048
#: the line a following filter writes once it has read all its directory held when it started:
#: until then, a trace it shows may lack what the job already wrote
CAUGHT_UP = "#cockpit-trace caught-up"

FILTER_SCRIPT = r'''
import glob, json, os, re, sys, time

CAP = 2048
CHUNK = 4 << 20  # bytes read per file and poll: memory stays small behind a big trace
PREFIX = "dedicated_log_torch_trace_"
KINDS = ("dynamo_start", "compilation_metrics", "bwd_compilation_metrics", "artifact", "str")
WITH_PAYLOAD = ("recompile_reasons", "dynamo_graph_break_reason", "dynamo_error", "torch_version")
CACHE = re.compile(r"_cache_(hit|miss|bypass)$")
HEAD = re.compile(r'^(\S+ \S+ \d+ [^\s\]]+:\d+\])(?: \[[^\]]*\])* (\{"([A-Za-z_]+)".*)$')
LIMITS = ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit", "accumulated_cache_size_limit")
CAUGHT_UP = "#cockpit-trace caught-up"


def cap(value):
    if isinstance(value, str) and len(value) > CAP:
        return value[:CAP]
    if isinstance(value, list):
        return [cap(v) for v in value[:16]]
    return value


class FileState(object):
    def __init__(self):
        self.offset = 0
        self.buf = b""
        self.keep = None  # (prefix, envelope) of a kept envelope whose payload is being read
        self.want_payload = False
        self.parts = []
        self.size = 0
        self.cut = False
        self.strings = {}


def wanted(kind, line):
    if kind not in KINDS:
        return False
    if kind != "artifact":
        return True
    m = re.search(r'"name": ?"([^"]+)"', line[:300])
    return bool(m) and (m.group(1) in WITH_PAYLOAD or bool(CACHE.search(m.group(1))))


def shape(env, kind):
    if kind == "dynamo_start":
        stack = env.get(kind, {}).get("stack")
        return stack
    if kind in ("compilation_metrics", "bwd_compilation_metrics"):
        metrics = env.get(kind)
        if isinstance(metrics, dict):
            config = metrics.pop("dynamo_config", None)
            if isinstance(config, str):
                try:
                    parsed = json.loads(config)
                except ValueError:
                    parsed = {}
                if isinstance(parsed, dict):
                    metrics["dynamo_config_limits"] = dict((k, parsed[k]) for k in LIMITS if k in parsed)
            for key in list(metrics):
                if key.endswith("_config") and isinstance(metrics[key], str):
                    del metrics[key]  # inductor/functorch/compiler settings: kilobytes, unread
                else:
                    metrics[key] = cap(metrics[key])
    return None


def finish(st, name, out):
    if st.keep is None:
        return
    prefix, env = st.keep
    st.keep = None
    extra = {"src": name}
    if st.want_payload:
        extra["payload"] = "\n".join(st.parts)
        if st.cut:
            extra["cut"] = True
    env["cockpit"] = extra
    out.append(prefix + " " + json.dumps(env, separators=(",", ":"), default=str))


def line(st, name, text, out):
    if text.startswith("\t"):
        if st.keep is not None and st.want_payload and not st.cut:
            piece = text[1:]
            if st.size + len(piece) + 1 > CAP:
                piece = piece[: max(0, CAP - st.size - 1)]
                st.cut = True
            st.parts.append(piece)
            st.size += len(piece) + 1
        return
    finish(st, name, out)
    m = HEAD.match(text)
    if m is None or not wanted(m.group(3), text):
        return
    try:
        env = json.loads(m.group(2))
    except ValueError:
        return
    if not isinstance(env, dict):
        return
    kind = m.group(3)
    if kind == "str":
        value = env.get("str")
        if isinstance(value, list) and len(value) == 2:
            st.strings[value[1]] = value[0]
        return
    stack = shape(env, kind)
    if isinstance(stack, list):
        for frame in stack:
            if isinstance(frame, dict) and frame.get("filename") in st.strings:
                frame["filename"] = st.strings[frame["filename"]]
    artifact = env.get("artifact") if kind == "artifact" else None
    st.want_payload = isinstance(artifact, dict) and artifact.get("name") in WITH_PAYLOAD
    st.keep, st.parts, st.size, st.cut = (m.group(1), env), [], 0, False
    if "has_payload" not in env:
        finish(st, name, out)


def feed(st, name, data, out, final=False):
    st.buf += data
    pieces = st.buf.split(b"\n")
    st.buf = pieces.pop()
    if final and st.buf:
        pieces.append(st.buf)
        st.buf = b""
    for raw in pieces:
        line(st, name, raw.decode("utf-8", "replace").rstrip("\r"), out)
    if final:
        finish(st, name, out)


def filter_text(data, name=""):
    st, out = FileState(), []
    feed(st, name, data, out, final=True)
    return out


def poll(directory, states, out, final=False, chunk=CHUNK):
    """Read what the files gained (at most CHUNK bytes each); True when some file has more."""
    more = False
    for path in sorted(glob.glob(os.path.join(directory, PREFIX + "*.log"))):
        st = states.get(path)
        if st is None:
            st = states[path] = FileState()
        try:
            size = os.path.getsize(path)
            if size < st.offset:
                st.__init__()
            with open(path, "rb") as f:
                f.seek(st.offset)
                data = f.read(max(0, min(size - st.offset, chunk)))
        except OSError:
            continue
        st.offset += len(data)
        more = more or st.offset < size
        feed(st, os.path.basename(path), data, out, final=final and st.offset >= size)
    return more


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    once = "--once" in argv
    interval, chunk = 0.5, CHUNK
    for a in argv:
        if a.startswith("--interval="):
            interval = float(a.split("=", 1)[1])
        if a.startswith("--chunk="):
            chunk = max(1, int(a.split("=", 1)[1]))
    directory = args[0] if args else "."
    states = {}
    behind = not once
    while True:
        out = []
        more = poll(directory, states, out, final=once, chunk=chunk)
        if behind and not more:  # all the directory held at the start is out: what follows is news
            out.append(CAUGHT_UP)
            behind = False
        if out:
            sys.stdout.write("\n".join(out) + "\n")
            sys.stdout.flush()
        if once and not more:
            return 0
        if not more:
            time.sleep(interval)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (BrokenPipeError, KeyboardInterrupt):
        sys.exit(0)
'''


def _script_function(name: str) -> Callable[..., object]:
    namespace: dict[str, object] = {"__name__": "cockpit_trace_filter"}
    exec(compile(FILTER_SCRIPT, "<cockpit trace filter>", "exec"), namespace)  # the filter runs as this very text
    return cast(Callable[..., object], namespace[name])


def filter_text(data: bytes, name: str = "") -> list[str]:
    """The filter's output lines for one trace file's whole text (``name``: the file's base name)."""
    return cast(list[str], _script_function("filter_text")(data, name))


def filter_file(path: str) -> list[str]:
    """:func:`filter_text` of a file on this machine."""
    with open(path, "rb") as f:
        return filter_text(f.read(), os.path.basename(path))


def script_command(directory: str, once: bool = False, interval: float = 0.5, python: str = "python3") -> list[str]:
    """argv that runs the filter with ``python`` on ``directory``."""
    argv = [python, "-c", FILTER_SCRIPT, directory, f"--interval={interval:g}"]
    return argv + ["--once"] if once else argv


def shell_command(directory: str, once: bool = False, interval: float = 0.5, python: str = "python3") -> str:
    """:func:`script_command` as one shell-quoted line (for ``ssh``, ``pct exec … -- sh -c``)."""
    return " ".join(shlex.quote(a) for a in script_command(directory, once, interval, python))


#: the files torch writes under ``TORCH_TRACE`` (one per rank and process), the ones the filter
#: reads (:data:`FILTER_SCRIPT`: its ``PREFIX`` + ``*.log``)
TRACE_GLOB = "dedicated_log_torch_trace_*.log"


def when_traced(directory: str, command: str) -> str:
    """Shell text that runs ``command`` once when a trace file in ``directory`` has a byte, and
    nothing otherwise: a glob and ``[ -s ]`` (built-ins), so a job that wrote no trace costs no
    process in the target."""
    d = shlex.quote(directory.rstrip("/") or "/")
    return f'for f in {d}/{TRACE_GLOB}; do if [ -s "$f" ]; then {command}; break; fi; done; true'


def once_if_traced(directory: str, python: str = "python3") -> str:
    """The whole-directory filter (``--once``), started only when a trace file there has a byte."""
    return when_traced(directory, shell_command(directory, once=True, python=python))

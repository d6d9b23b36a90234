"""Property tests: every parser and the classifier take arbitrary input without raising."""

from __future__ import annotations

import math
import re

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cockpit.core.layers import Finding, Layer
from cockpit.core.probes.gpu import NA, NaType, parse_gpu_output, parse_value, unaccounted_memory
from cockpit.core.probes.kmsg import oom_killed, parse_kmsg
from cockpit.core.probes.logs import LOG_MARK, LogFollowerState, sanitize
from cockpit.core.probes.procs import Proc, ProcTree, analyse, parse_proc_records, parse_procps, parse_ps
from cockpit.core.probes.signatures import BUILTIN, Classifier, _trie_regex, load_signatures
from tests.examples import examples

FAST = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])

texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=400)
raw = st.binary(max_size=600)

PS_SNIPPETS = [
    "@@cockpit-ps procps",
    "@@cockpit-ps proc",
    "@@uptime 123.45",
    "@@conf 100",
    "@@pw 0 root",
    "      1       0       1       1 Ss         1390  0.0 12740    1 do_epoll_wait    root   systemd         /sbin/init",
    "  91451       1   91380   91380 Zl         1027 331.0     0    5 -     root   python3         [python3] <defunct>",
    "P\t0\t10\t2\t0\tpython3 x \t5 (py (x)) Z 1 5 5 0 -1 0 0 0 0 0 1 2 0 0 20 0 2 0 50 0 0",
    "P\t\t\t\t\t\t1 (a) S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0",
]


@FAST
@given(st.lists(st.one_of(texts, st.sampled_from(PS_SNIPPETS)), max_size=12), st.booleans())
def test_ps_parsers_never_raise(parts: list[str], as_bytes: bool) -> None:
    text = "\n".join(parts)
    data = text.encode("utf-8", "surrogatepass") if as_bytes else text
    for fn in (parse_ps, parse_procps, parse_proc_records):
        procs, bad = fn(data)
        assert isinstance(bad, list)
        tree = ProcTree(procs)
        assert len(list(tree.walk())) == len(tree)
        analyse(procs, job_pids=[p.pid for p in procs[:1]], job_pgid=1, job_command=parts[0] if parts else None)


@FAST
@given(raw)
def test_ps_parser_random_bytes(data: bytes) -> None:
    parse_ps(data)


ints = st.integers(min_value=0, max_value=50)
procs_st = st.builds(
    Proc,
    pid=ints,
    ppid=ints,
    pgid=ints,
    sid=ints,
    state=st.sampled_from(["S", "Ss", "Z", "Zl", "D", "R+", "Dl", "I<"]),
    elapsed_s=st.integers(0, 10**7),
    cpu=st.floats(0, 1000),
    rss_kb=st.integers(0, 10**9),
    user=st.sampled_from(["root", "1000"]),
    comm=st.sampled_from(["systemd", "sleep", "python3", "bash", "tmux: server", ""]),
    args=st.sampled_from(["/sbin/init", "python3 train.py", "[python3] <defunct>", "", "sleep infinity"]),
    threads=st.integers(1, 64),
    wchan=st.sampled_from(["", "-", "0", "nv_wait", "uvm_fault", "do_wait"]),
)


@FAST
@given(st.lists(procs_st, max_size=30), st.lists(ints, max_size=3), st.one_of(st.none(), ints))
def test_tree_and_analysis_on_any_process_graph(procs: list[Proc], job_pids: list[int], pgid: int | None) -> None:
    tree = ProcTree(procs)
    walked = [p.pid for _, p in tree.walk()]
    assert sorted(walked) == sorted(tree.by_pid)
    for p in tree.by_pid.values():
        tree.ancestors(p.pid)
        tree.descendants(p.pid)
    for f in analyse(procs, job_pids=job_pids, job_pgid=pgid, job_command="python3 train.py"):
        assert isinstance(f, Finding) and f.summary and isinstance(f.layer, Layer)
        f.to_dict()


GPU_SNIPPETS = [
    "@@cockpit-gpu query-gpu",
    "@@cockpit-gpu compute-apps",
    "@@cockpit-gpu rc 0",
    "@@cockpit-gpu rc 9",
    "@@cockpit-gpu rc 124 stuck",
    "@@cockpit-gpu rc x",
    "0, NVIDIA H100 80GB HBM3, GPU-5f2c, 00000000:18:00.0, 550.90.07, P0, 64, 97, 45, 71234, 81559, 512.34, 700.00, [N/A], Disabled, 0",
    "1, x, GPU-1, b, d, P0, [N/A], [Not Supported], 1e400, nan, -5, inf, , [Insufficient Permissions], , ",
    "48213, /usr/bin/python3, 71222, GPU-5f2c",
    "48213, , [N/A], GPU-zzz",
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
]


@FAST
@given(
    st.lists(st.one_of(texts, st.sampled_from(GPU_SNIPPETS)), max_size=12),
    st.one_of(texts, raw),
    st.one_of(st.none(), st.integers(-300, 300)),
    st.one_of(st.none(), st.sets(st.integers(0, 100000), max_size=5)),
)
def test_gpu_parser_never_raises(parts, stderr, code, live) -> None:
    snap = parse_gpu_output("\n".join(parts), stderr, code)
    snap.to_dict()
    for f in unaccounted_memory(snap, live, zombie_pids=[48213]):
        f.to_dict()
    for g in snap.gpus:
        g.memory_pct, g.memory_free_mib  # noqa: B018
        f"{g.power_draw_w:>8.1f} {g.utilization_pct:>3}"


@FAST
@given(raw, raw, st.integers(-5, 300))
def test_gpu_parser_random_bytes(out: bytes, err: bytes, code: int) -> None:
    parse_gpu_output(out, err, code)


@FAST
@given(st.text(max_size=40), st.sampled_from([int, float, str]))
def test_parse_value_never_raises(text: str, kind: type) -> None:
    v = parse_value(text, kind)
    if isinstance(v, NaType):
        assert str(v) == "N/A" and not v


@FAST
@given(st.one_of(st.integers(), st.floats(allow_nan=True, allow_infinity=True)), st.text(max_size=10))
def test_na_arithmetic_and_comparisons(x, spec) -> None:
    na = NaType("[N/A]")
    for v in (na + x, x + na, na * x, x - na, na / (x or 1), (x or 1) / na):
        assert isinstance(v, float) and math.isnan(v)
    assert not (na < x) and not (na > x) and not (x < na) and not (na >= x)
    try:
        format(na, spec)
    except ValueError:
        pass  # only impossible specs; the common ones are tested in test_probes_gpu
    assert na == NA and na != x


LOG_SNIPPETS = [
    "Traceback (most recent call last):",
    "[rank0]: Traceback (most recent call last):",
    '  File "x.py", line 1, in f',
    "[rank0]:   File \"x.py\", line 1",
    "Exception in thread drafter-0:",
    "Exception ignored in: <function f>",
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
    "RuntimeError: Detected that you are using FX to symbolically trace",
    "[rank0]: torch.OutOfMemoryError: CUDA out of memory.",
    "ValueError: boom",
    "KeyboardInterrupt",
    "Killed",
    "",
    "step 1 loss 2.0",
    "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:",
]


@FAST
@given(st.lists(st.one_of(texts, st.sampled_from(LOG_SNIPPETS)), max_size=60))
def test_classifier_never_raises_and_stays_consistent(lines: list[str]) -> None:
    c = Classifier(max_matches=20, max_traceback_lines=60)
    seen = []
    for line in lines:
        for m in c.feed(line):
            assert 1 <= m.line_no <= c.line_no
            seen.append(m)
    seen += c.flush()
    assert c.line_no == len(lines)
    fe, le = c.first_error, c.final_error
    assert (fe is None) == (le is None)
    if fe is not None:
        assert fe.is_error and le.is_error
        assert fe.line_no <= le.line_no or fe.chain_id == le.chain_id  # ordered by the deciding line
        assert len(fe.traceback) <= 61 and fe.to_finding().summary
    for m in c.errors:
        m.to_dict()


STRUCTURAL = re.compile(r"Traceback \(most recent call last\)|Exception in thread|Exception ignored")
KEYWORD_TEXT = st.lists(
    st.one_of(
        st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ :._'()0123456789", max_size=12),
        st.sampled_from(
            ["CUDA error: ", "out of memory", "OutOfMemoryError", "Killed", "NCCL error", "ModuleNotFoundError: ",
             "No module named 'x'", "Fatal Python error: ", "terminate called after throwing an instance of 'x'",
             "illegal memory access", "Watchdog caught", "SyntaxError: ", "  ", "\n", "Errno 28", "_dynamo.exc.",
             "device-side assert triggered", "ImportError: "]
        ),
    ),
    max_size=6,
).map("".join)


@settings(max_examples=examples(400), deadline=None)
@given(KEYWORD_TEXT)
def test_prefilter_never_hides_a_match(line: str) -> None:
    """On single ordinary lines the fast classifier agrees with running every regex."""
    line = line.replace("\n", " ")
    assume(not STRUCTURAL.search(line))
    naive = [s for s in BUILTIN if s.regex.search(line)]
    got = Classifier().feed(line)
    assert bool(got) == bool(naive), (line, [s.kind for s in naive])
    if got:
        assert got[0].signature is max(naive, key=lambda s: s.priority)


@FAST
@given(st.lists(st.dictionaries(st.sampled_from(["pattern", "layer", "label", "advice", "kind", "severity", "priority",
                                                 "ignore_case", "bogus"]),
                                st.one_of(texts, st.integers(), st.booleans(), st.sampled_from(["app", "gpu", "(", "a+"]))),
                max_size=3))
def test_load_signatures_only_raises_value_error(items) -> None:
    try:
        sigs = load_signatures(items)
    except ValueError as exc:
        assert str(exc).startswith("signatures")
    else:
        c = Classifier(user=sigs)
        c.feed("some line with app gpu")


def frame(size: int, start: int, data: bytes, inode: str = "5") -> bytes:
    return f"{LOG_MARK} ok {inode} {size} {start} {len(data)}\n".encode() + data + f"\n{LOG_MARK} end\n".encode()


@FAST
@given(st.lists(st.one_of(raw, st.builds(frame, st.integers(0, 2000), st.integers(0, 2000), raw,
                                          st.sampled_from(["5", "6", "-"]))), max_size=10))
def test_log_follower_never_raises(outputs: list[bytes]) -> None:
    s = LogFollowerState("/x", max_line_bytes=64, overlap=8, initial_tail_bytes=500)
    for i, out in enumerate(outputs):
        u = s.apply(out, float(i))
        assert s.offset >= 0
        for line in u.lines:
            assert "\x1b" not in line and "\x00" not in line and "\n" not in line
            assert len(line.encode()) <= 64 * 3 + 40
        s.command(100)
    s.flush_partial()


BAD_CHARS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


@FAST
@given(st.text(max_size=300))
def test_sanitize_leaves_no_control_characters(text: str) -> None:
    out = sanitize(text)
    assert not BAD_CHARS.search(out)
    assert sanitize(out) == out or "\\" in out  # idempotent on its own output (modulo visible escapes)


KMSG_SNIPPETS = [
    "@@cockpit-kmsg btime 1700000000",
    "@@cockpit-kmsg dmesg-raw",
    "@@cockpit-kmsg unavailable",
    "[ 1.0] oom-kill:constraint=CONSTRAINT_MEMCG,oom_memcg=/lxc/200,task=python3,pid=5,uid=0",
    "[ 1.1] Memory cgroup out of memory: Killed process 5 (python3) total-vm:1kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB",
    "2025-01-14T01:20:31,000100+01:00 NVRM: Xid (PCI:0000:18:00): 31, pid=9, name=python3, x",
    "[9.9] INFO: task python3:1234 blocked for more than 120 seconds.",
    "[9.9] python3[1]: segfault at 0 ip 0 sp 0 error 4 in libx.so[1+2]",
    "2025-13-45T99:99:99,1+99:99 NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.",
]


@FAST
@given(st.lists(st.one_of(texts, st.sampled_from(KMSG_SNIPPETS)), max_size=15), st.booleans())
def test_kmsg_parser_never_raises(parts: list[str], as_bytes: bool) -> None:
    text = "\n".join(parts)
    rep = parse_kmsg(text.encode("utf-8", "surrogatepass") if as_bytes else text)
    rep.to_dict()
    oom_killed(rep.findings, "python3", since=0.0, container=200)
    oom_killed(rep.findings, 5)


@FAST
@given(raw)
def test_kmsg_parser_random_bytes(data: bytes) -> None:
    parse_kmsg(data)


@FAST
@given(st.lists(st.text(alphabet="ab(.)*c|", min_size=1, max_size=5), min_size=1, max_size=8), st.text(alphabet="ab(.)*c|x", max_size=30))
def test_trie_prefilter_equals_any_substring(words: list[str], hay: str) -> None:
    rx = re.compile(_trie_regex(words))
    assert (rx.search(hay) is not None) == any(w in hay for w in words)

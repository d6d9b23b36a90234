"""The follower and the classifier handle a read as a batch: the same lines, numbers and matches
as line by line, whatever the read boundaries, and a shape remembered clean never hides a match."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cockpit.core.probes.classifier import Classifier
from cockpit.core.probes.logs import LOG_MARK, LogFollowerState, LogRing, sanitize
from cockpit.core.probes.sig_prefilter import build_prefilter
from cockpit.core.probes.sig_table import BUILTIN
from cockpit.core.probes.signatures import load_signatures
from tests.examples import examples

FAST = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])

STEP = "step {n} | loss 2.{n} | lr 3.000e-04 | tokens/s 12{n}"
TRACEBACK = ["Traceback (most recent call last):", '  File "train.py", line 9, in <module>',
             "    main()", "RuntimeError: CUDA error: an illegal memory access was encountered"]


def _key(ms: list) -> list[tuple]:
    return [(m.line_no, m.kind, m.label, m.severity, m.update, m.traceback_start) for m in ms]


def _log(n: int) -> list[str]:
    out: list[str] = []
    for i in range(n):
        out.append(STEP.format(n=i))
        if i % 97 == 50:
            out += TRACEBACK
        if i % 131 == 7:
            out.append(f"OSError: [Errno {24 + i % 7}] Too many open files")
        if i % 89 == 3:
            out.append(f"step {i} | Killed")
    return out


def test_batches_classify_as_lines_do() -> None:
    lines = _log(2000)
    one = Classifier()
    want = [m for line in lines for m in one.feed(line)]
    many = Classifier()
    got = []
    for i in range(0, len(lines), 300):  # warm shapes after the first batch
        got += many.feed_many(lines[i: i + 300])
    assert _key(got) == _key(want)
    assert {"cuda-illegal-access", "resource-limit", "disk-full"} <= {m.kind for m in want}  # tracebacks, Errno 24 / 28
    assert many.line_no == one.line_no == len(lines)
    assert many.error_count == one.error_count
    assert _key(list(many.matches)) == _key(list(one.matches))


def test_a_clean_shape_never_hides_a_keyword_with_other_digits() -> None:
    p = build_prefilter(BUILTIN)
    assert p("OSError: [Errno 25] Inappropriate ioctl") is False or p.search("OSError: [Errno 25] Inappropriate ioctl") is None
    assert p("OSError: [Errno 28] No space left on device")  # same shape as the one above: not cached clean
    assert not p("step 1 | loss 2.5")
    assert p.clean  # remembered
    assert p("step 1 | Killed")


def test_case_insensitive_keywords_turn_shapes_off() -> None:
    user = load_signatures([{"pattern": "disk quota", "layer": "host", "label": "quota", "ignore_case": True}])
    c = Classifier(user=user)
    assert c._prefilter.shapes(["a", "b"]) is None
    assert c.feed_many(["x", "DISK QUOTA hit", "y"])


def _reference(data: bytes, cap: int) -> list[str]:
    out = []
    for raw in data.split(b"\n")[:-1]:
        cut = max(0, len(raw) - cap)
        text = raw[:cap].decode("utf-8", "replace")
        if cut:
            text = text.rstrip("\ufffd") + f" … [{cut} bytes cut]"
        out.append(sanitize(text))
    return out


def _feed(data: bytes, cuts: list[int], cap: int) -> tuple[list[str], LogFollowerState]:
    f = LogFollowerState("/x", ring=LogRing(100000), max_line_bytes=cap, initial_tail_bytes=None, overlap=0)
    got: list[str] = []
    bounds = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    for a, b in zip(bounds, bounds[1:], strict=False):
        out = f"{LOG_MARK} ok 1 {b} {a} {b - a}\n".encode() + data[a:b] + f"\n{LOG_MARK} end\n".encode()
        upd = f.apply(out, 0.0)
        assert not [e for e in upd.events if e.kind == "probe-error"]
        got += upd.lines
    return got, f


PIECES = st.sampled_from([b"step 1 | loss 2.5", b"\n", b"\xe2\x82", b"\xac", b"\x1b[31m", b"\r", b"x" * 70, b"\xff", "é€".encode(), b"\t"])


@FAST
@given(st.lists(PIECES, max_size=60).map(b"".join), st.lists(st.integers(min_value=0, max_value=5000), max_size=8))
def test_follower_batches_equal_lines_at_any_read_boundary(data: bytes, cuts: list[int]) -> None:
    cap = 64
    got, f = _feed(data, cuts, cap)
    assert got == _reference(data, cap)
    assert f.ring.total == len(got) == data.count(b"\n")
    whole, _ = _feed(data, [], cap)
    assert whole == got

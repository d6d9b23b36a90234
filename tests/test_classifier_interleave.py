"""Property tests: several threads' tracebacks interleaved on one stream, even mid-line.

Three drafter threads die of the demo's FX/dynamo race at once and print their tracebacks without
a lock, while the main thread keeps printing step lines.  However their writes interleave, every
thread that died must count as an error, and ``first_error`` must be there.

How the writes are cut follows CPython, with one simplification: ``threading.excepthook`` prints
``Exception in thread ``, ``NAME`` and ``:`` + newline in three writes, taken here as two (the
header, then its newline; the shapes three writes make, names glued together or written a few
lines on, are tested below on CPython's own output), then ``Traceback (most recent call last):``, one write per
frame (its ``File`` line and code line together) and one for the exception line.  On top of that
the "mid-line" strategy cuts each write at random points, as a block-buffered stream does, except
inside the few words that say what happened (the two headers and the exception's
``RuntimeError: Detected that you are using FX…``): another writer's text inside those words
leaves nothing to recognise, and CPython never writes them in pieces.
"""

from __future__ import annotations

import functools
import random

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cockpit.core.layers import Layer, Severity
from cockpit.core.probes.signatures import Classifier
from tests.examples import examples

SETTINGS = settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])

FX_KEY = "RuntimeError: Detected that you are using FX to symbolically trace"
FX_LINE = FX_KEY + " a dynamo-optimized function. This is not supported at the moment."
FRAMES = [  # the demo's stack: threading → drafter → minitorch's eval_frame
    ('  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner', "    self.run()"),
    ('  File "/workspace/drafter.py", line 63, in run', "    compile_drafter(self)"),
    ('  File "/workspace/drafter.py", line 77, in compile_drafter', "    drafter.forward(0.5)"),
    ('  File "/workspace/minitorch/_dynamo/eval_frame.py", line 43, in _fn', "    raise RuntimeError("),
]
THREADS = 3


def thread_lines(i: int) -> list[str]:
    lines = [f"Exception in thread drafter-{i}:", "Traceback (most recent call last):"]
    for file_line, code in FRAMES:
        lines += [file_line, code]
    return lines + [FX_LINE]


def thread_writes(i: int) -> list[str]:
    """The writes CPython's excepthook makes for thread ``i``'s death."""
    writes = [f"Exception in thread drafter-{i}:", "\n", "Traceback (most recent call last):\n"]
    writes += [f"{file_line}\n{code}\n" for file_line, code in FRAMES]
    return writes + [FX_LINE + "\n"]


@functools.cache
def cut_points(text: str) -> tuple[int, ...]:
    """Where ``text`` may be cut: anywhere but inside the words that identify a thread's death."""
    inside: set[int] = set()
    for word in ("Exception in thread drafter-", "Traceback (most recent call last):", FX_KEY):
        at = text.find(word)
        if at >= 0:
            end = text.find(":", at + len(word) - 1) + 1 if word.endswith("-") else at + len(word)
            inside.update(range(at + 1, end))
    return tuple(i for i in range(1, len(text)) if i not in inside)


def cut(rng: random.Random, text: str, most: int) -> list[str]:
    """``text`` as up to ``most + 1`` writes, cut at random points outside the protected words."""
    allowed = cut_points(text)
    points = sorted(set(rng.sample(allowed, min(len(allowed), rng.randint(0, most)))))
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


@st.composite
def interleaved_log(draw: st.DrawFn, mid_line: bool) -> list[str]:
    """Three threads' tracebacks and the main thread's step lines, interleaved; the log's lines.

    Hypothesis draws a seed, the number of step lines and how many cuts a write may get; a
    seeded ``random.Random`` makes the hundred-odd choices of one log (drawing each from
    Hypothesis costs a millisecond apiece).
    """
    rng = random.Random(draw(st.integers(min_value=0, max_value=2**32 - 1)))
    steps = draw(st.integers(min_value=0, max_value=20))
    most = draw(st.integers(min_value=1, max_value=3)) if mid_line else 0
    step_writes = [f"step {n} loss {2.0 - n / 100:.4f}\n" for n in range(steps)]
    if mid_line:
        writers = [thread_writes(i) for i in range(THREADS)] + [step_writes]
        writers = [[piece for w in ws for piece in cut(rng, w, most)] for ws in writers]
    else:
        writers = [[line + "\n" for line in thread_lines(i)] for i in range(THREADS)] + [step_writes]
    at = [0] * len(writers)
    stream: list[str] = []
    while True:
        live = [k for k in range(len(writers)) if at[k] < len(writers[k])]
        if not live:
            break
        k = rng.choice(live)
        stream.append(writers[k][at[k]])
        at[k] += 1
    text = "".join(stream)
    assert text.endswith("\n")
    return text[:-1].split("\n")


def classify(lines: list[str]) -> Classifier:
    c = Classifier()
    for line in lines:
        c.feed(line)
    return c


@SETTINGS
@given(interleaved_log(mid_line=False))
def test_whole_lines_interleaved_every_thread_counts(lines: list[str]) -> None:
    c = classify(lines)
    first = c.first_error
    assert first is not None and first.layer is Layer.APP and first.kind == "fx-dynamo-race"
    dead = c.dead_threads()
    assert len(dead) == THREADS and c.error_count == THREADS
    assert {m.thread for m in dead} == {f"drafter-{i}" for i in range(THREADS)}
    assert all(m.is_error and m.kind == "fx-dynamo-race" for m in dead)
    assert not c.flush()  # nothing left open
    assert len(c.dead_threads()) == THREADS and c.error_count == THREADS


@SETTINGS
@given(interleaved_log(mid_line=True))
# every exception line garbled: one cut inside a frame's word (`raise RuntimeErRuntimeError: …`)
@example(
    lines=['Exception in thread drafter-2:Exception in thread drafter-0:step',
     ' 0 lossException in thread drafter-1:Traceback (most recent call last):',
     ' 2.00',
     '00',
     'Traceback (most recent call last):',
     '  File "/us  File "/usr/lib/python3.11/threading.py", line 1045, in _b',
     'ootstrap_inner',
     '    self.run()',
     'r/lib/python3.11/threading.py", line 1045, in _bootstrap_  File "/worksstep 1 loss 1.9900',
     'stTraceback (most recent call last):',
     'pace/drafter.py", line 63, in run',
     '    compile_drafter(self)',
     '  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner',
     '    self.run()',
     '  File "/workspace/drafter.py", line 77, in compile_drafteep 2 loss 1.9800',
     '  File "/workspace/drafter.py", line 63, in run',
     '    compile_dinner',
     '    self.run()',
     'r',
     '    drafter.forward(0.5)',
     '  File "/workspace/rafter(self)',
     'minitorch/_dynamo/eval_frame.py", line 43, in _fn',
     '    raise Ru  File  File "/workspace/drafter.py", line 77, in comntimeError(',
     'steppile_drafter',
     '   RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized function. This  drafter.forward(0.5)',
     ' "/workspace/drafter.py", line  3 loss is not supported at the m63, in run',
     'oment.',
     '1.9700',
     'step 4 l    compile_drafter(self)',
     '   File "/workspace/drafter.py", line 77, in compile_drafter',
     '    drafter.forward(0.5)',
     ' File "/workspace/minitorch/_dynamo/eval_frame.py", line 43, in _fn',
     '    raise RuntimeError(',
     '  File "/workspace/minitorch/_dynamo/eval_frame.py", line 43, in _fn',
     '    raise RuntimeErRuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized function. This is not supported at the moment.',
     'oss 1.9600',
     'step 5ror(',
     ' RuntimeError: Detected that you are using FX to symbolically trace a dynamoloss 1.9500',
     'step 6 loss 1.9400',
     '-optimized function. This is not supporstep 7 loss 1.93ted at the moment.',
     '00',
     'step 8 loss 1.9200'],
)
def test_writes_cut_mid_line_still_count_every_thread(lines: list[str]) -> None:
    c = classify(lines)
    first = c.first_error
    assert first is not None and first.layer is Layer.APP and first.is_error
    assert len(c.dead_threads()) >= 1
    c.flush()  # the process is gone: a traceback whose exception line was lost still says its thread died
    dead = c.dead_threads()
    assert {m.thread for m in dead} == {f"drafter-{i}" for i in range(THREADS)}
    assert all(m.is_error and m.layer is Layer.APP for m in dead)
    assert c.error_count >= THREADS
    assert c.first_error is not None and c.first_error.layer is Layer.APP


# -- the shapes seen in real logs ---------------------------------------------------------------


def test_thread_header_glued_after_a_frame_line() -> None:
    lines = [
        "Exception in thread drafter-1:",
        "Traceback (most recent call last):",
        '  File "/workspace/drafter.py", line 63, in run',
        '    raise RuntimeError("FX traced a dynamo-optimized function")Exception in thread drafter-2:',
        "RuntimeError: FX traced a dynamo-optimized function",
        "Traceback (most recent call last):",
        '  File "/workspace/drafter.py", line 63, in run',
        FX_LINE,
    ]
    c = classify(lines)
    dead = c.dead_threads()
    assert [m.thread for m in dead] == ["drafter-1", "drafter-2"]
    assert [m.kind for m in dead] == ["python-traceback", "fx-dynamo-race"]
    assert dead[0].traceback[-2] == '    raise RuntimeError("FX traced a dynamo-optimized function")'
    assert c.first_error is not None and c.first_error.thread == "drafter-1" and c.error_count == 2


def test_traceback_header_starts_mid_line() -> None:
    lines = [
        "Exception in thread drafter-0:",
        "Exception in thread drafter-1:",
        '  File "/workspace/drafter.py", line 63, in runTraceback (most recent call last):',
        "Traceback (most recent call last):",
        '  File "/workspace/drafter.py", line 63, in run',
        FX_LINE,
        FX_LINE,
    ]
    c = classify(lines)
    assert sorted(m.thread or "" for m in c.dead_threads()) == ["drafter-0", "drafter-1"]
    assert c.error_count == 2 and c.counts == {"fx-dynamo-race": 2}


def test_tagged_prefixes_still_separate_ranks() -> None:
    c = classify([
        "[rank0]: Traceback (most recent call last):",
        "[rank1]: Traceback (most recent call last):",
        '[rank0]:   File "a.py", line 1, in f',
        "[rank1]: ValueError: one",
        "[rank0]: KeyError: 'two'",
    ])
    assert [(m.label, m.traceback[0]) for m in c.errors] == [
        ("ValueError: one", "[rank1]: Traceback (most recent call last):"),
        ("KeyError: 'two'", "[rank0]: Traceback (most recent call last):"),
    ]


def test_a_thread_traceback_cut_before_its_exception_is_an_error_at_flush() -> None:
    c = classify(["Exception in thread drafter-0:", "Traceback (most recent call last):",
                  '  File "/workspace/drafter.py", line 63, in run', "    compile_drafter(self)"])
    assert c.first_error is None
    (m,) = c.flush()
    assert m.kind == "python-traceback-incomplete" and m.severity is Severity.ERROR and m.thread == "drafter-0"
    assert c.first_error == m and [d.thread for d in c.dead_threads()] == ["drafter-0"]


def test_the_fx_message_is_recognised_wherever_one_other_write_cuts_it() -> None:
    """The lab's jobsim cut the exception line itself (``…using FX to symbolicall    raise Ruy trace
    a dynamo-optimized function``): the signature has two fragments that do not overlap, so any
    one cut leaves one of them whole."""
    missed = []
    for at in range(len(FX_LINE) + 1):
        c = Classifier()
        line = FX_LINE[:at] + "    raise Ru" + FX_LINE[at:]
        kinds = {m.signature.kind for m in c.feed(line) + c.flush() if m.signature is not None}
        if "fx-dynamo-race" not in kinds:
            missed.append(at)
    assert not missed, [FX_LINE[:at] + "|" + FX_LINE[at:] for at in missed[:3]]


# -- two threads dying at once on a line-buffered stderr (CPython 3.11's own output, captured) ---------

FRAME = '  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner'


def _two_loaders(head: list[str], between: list[str] | None = None) -> list[str]:
    one = ["Traceback (most recent call last):", FRAME, "    self.run()", '  File "/w/train.py", line 5, in load',
           '    raise KeyError("shard")', "KeyError: 'shard'"]
    return head + one[:2] + (between or []) + one[2:] + one


def test_two_headers_glued_with_their_names_glued_name_both_threads() -> None:
    c = classify(_two_loaders(["Exception in thread Exception in thread loader-9loader-7:", ":"]))
    assert sorted(m.thread or "" for m in c.dead_threads()) == ["loader-7", "loader-9"]


def test_a_header_whose_colon_came_after_the_next_header_names_its_thread() -> None:
    c = classify(_two_loaders(["Exception in thread loader-7Exception in thread loader-9:", ":"]))
    assert sorted(m.thread or "" for m in c.dead_threads()) == ["loader-7", "loader-9"]


def test_a_thread_name_written_lines_later_names_the_header_that_lost_it() -> None:
    c = classify(_two_loaders(["Exception in thread Exception in thread loader-7:"], between=["loader-9:"]))
    assert sorted(m.thread or "" for m in c.dead_threads()) == ["loader-7", "loader-9"]
    assert c.error_count == 2


def test_glued_names_split_only_where_a_stem_repeats() -> None:
    from cockpit.core.probes.tb_parts import split_names, thread_names

    assert split_names("loader-9loader-7", 2) == ["loader-9", "loader-7"]
    assert split_names("Thread-1 (f)Thread-12 (f)", 2) == ["Thread-1 (f)", "Thread-12 (f)"]
    assert split_names("w-1w-2w-3", 3) == ["w-1", "w-2", "w-3"]
    assert split_names("readerwriter", 2) == ["readerwriter", ""]  # nothing repeats: not cut at a guess
    assert thread_names("Exception in thread Exception in thread loader-9loader-7:") == ["loader-9", "loader-7"]
    assert thread_names("Caught Exception in thread pool worker, retrying: x") == []  # prose, not a header


def test_a_thread_name_glued_to_another_threads_frame_line_still_names_it() -> None:
    # captured from a lab attempt: loader-7's header and name, then loader-9's `self.run()` frame,
    # on one line; loader-7's colon came later on a line of its own
    lines = ["Exception in thread loader-9:", "Traceback (most recent call last):", FRAME,
             "Exception in thread loader-7    self.run()",
             '  File "/usr/lib/python3.11/threading.py", line 975, in run', "    self._target(*self._args, **self._kwargs)",
             '  File "/w/train.py", line 5, in loader', '    raise KeyError(f"shard-{i}")', "KeyError: 'shard-9'", ":",
             "Traceback (most recent call last):", FRAME, "    self.run()",
             '  File "/usr/lib/python3.11/threading.py", line 975, in run', "    self._target(*self._args, **self._kwargs)",
             '  File "/w/train.py", line 5, in loader', '    raise KeyError(f"shard-{i}")', "KeyError: 'shard-7'"]
    c = classify(lines)
    assert sorted(m.thread or "" for m in c.dead_threads()) == ["loader-7", "loader-9"]
    assert c.error_count == 2


def test_a_late_thread_name_glued_before_another_threads_frame_line_names_its_header() -> None:
    # captured (two threads raising at once, stderr piped): the first header lost its name, which
    # came at the start of a later line with the other thread's first frame glued behind it, and
    # its colon on a line of its own after that.  (loader-9's own exception line came cut in two,
    # "KeyError" glued to a code line: that thread is not told apart here, a limit left as it is)
    lines = ["Exception in thread Exception in thread loader-9:", "Traceback (most recent call last):",
             "loader-7" + FRAME, ":", "Traceback (most recent call last):", "  " + FRAME,
             "    self.run()", '  File "/usr/lib/python3.11/threading.py", line 982, in run', "    self.run()",
             '  File "/usr/lib/python3.11/threading.py", line 982, in run', "    self._target(*self._args, **self._kwargs)",
             '  File "/w/train.py", line 5, in f', '    raise KeyError("shard")',
             "KeyErrorself._target(*self._args, **self._kwargs)", '  File "/w/train.py", line 5, in f', ": 'shard'",
             '    raise KeyError("shard")', "KeyError: 'shard'"]
    c = classify(lines)
    assert "loader-7" in [m.thread for m in c.dead_threads()]

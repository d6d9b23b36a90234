"""Loop death, the pure part: which traceback in a log is the training loop's own end.

The tracebacks are printed by a real interpreter (``sys.executable`` running a small program),
not typed in: the main thread's uncaught exception, a worker thread's, a handled error logged with
``logging.exception``/``exc_info`` (a traceback too, but the loop goes on), and torchrun-style
rank prefixes.  Before loop death existed, nothing told these apart: every one was just an error.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

from cockpit.core.actions.jobstate import LogScan
from cockpit.core.actions.loopdeath import (
    LOOP_CONFIRM_S,
    describe,
    find_loop_death,
    held_by,
    parse_threads,
    python_names,
    threads_command,
    unconfirmed_s,
)
from cockpit.core.probes.signatures import Classifier


def run_py(src: str) -> list[str]:
    """The lines a real Python prints (stdout and stderr together, as ``> log 2>&1``) for ``src``."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(src)], capture_output=False, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=30)
    return r.stdout.splitlines()


def scan_of(lines: list[str]) -> LogScan:
    scan = LogScan(re.compile(r"step \d+"), Classifier())
    scan.feed(("\n".join(lines) + "\n").encode())
    return scan


LOOP = """
import sys
def train():
    for step in range(1, 4):
        print(f"step {step} loss 2.5", flush=True)
    raise FloatingPointError("loss is nan at step 3")
def main():
    train()
main()
"""


def test_the_main_threads_uncaught_exception_is_the_loops_death():
    lines = run_py(LOOP)
    assert lines[-1] == "FloatingPointError: loss is nan at step 3"  # the interpreter's own text
    ld = find_loop_death(scan_of(lines), now=100.0)
    assert ld is not None and ld.exc == "FloatingPointError" and ld.message == "loss is nan at step 3"
    assert ld.rank is None and ld.match.layer.value == "app" and ld.seen_at == 100.0


def test_a_worker_threads_traceback_is_an_error_but_not_the_loops_death():
    lines = run_py("""
        import threading
        def work():
            raise RuntimeError("drafter failed")
        t = threading.Thread(target=work, name="drafter-0"); t.start(); t.join()
        print("step 1 loss 2.5", flush=True)
    """)
    assert any(line.startswith("Exception in thread drafter-0") for line in lines)
    scan = scan_of(lines)
    assert scan.errors() and find_loop_death(scan) is None


def test_a_handled_error_logged_with_its_traceback_is_not_the_loops_death():
    # at module level on purpose: its traceback starts at <module> like a real death; the log record says handled
    for how in ('logging.exception("step failed")', 'logging.warning("retrying", exc_info=True)',
                'log.error("step failed", exc_info=True)'):
        lines = run_py(f"""
            import logging, sys
            logging.basicConfig(stream=sys.stdout, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
            log = logging.getLogger("trainer")
            try:
                raise FloatingPointError("loss is nan")
            except FloatingPointError:
                {how}
        """)
        assert "Traceback (most recent call last):" in lines, lines
        scan = scan_of(lines)
        assert scan.errors(), how  # still an error for the verdict, as today
        assert find_loop_death(scan) is None, (how, lines)


def test_a_traceback_printed_by_the_code_that_caught_it_is_not_the_loops_death():
    lines = run_py("""
        import traceback
        def step():
            try:
                raise ValueError("bad batch")
            except ValueError:
                traceback.print_exc()
        step()
    """)
    assert find_loop_death(scan_of(lines)) is None  # its outermost frame is `step`, not the program's entry


def test_progress_after_the_traceback_means_the_loop_went_on():
    lines = run_py(LOOP)
    assert find_loop_death(scan_of(lines + ["step 4 loss 2.4"])) is None


def test_a_crash_its_torchelastic_agent_restarts_was_a_workers_not_the_loops_death():
    lines = run_py(LOOP)
    restart = ("WARNING:torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. 2/3 attempts left; "
               "will restart worker group")
    assert find_loop_death(scan_of(lines + [restart])) is None
    assert find_loop_death(scan_of([restart] + lines)) is not None  # a restart before it says nothing of this crash


def test_a_chained_exception_names_the_one_that_ended_the_program():
    lines = run_py("""
        def main():
            try:
                raise KeyError("batch")
            except KeyError:
                raise FloatingPointError("loss is inf")
        main()
    """)
    ld = find_loop_death(scan_of(lines))
    assert ld is not None and ld.exc == "FloatingPointError" and ld.message == "loss is inf"


def test_python_m_entry_counts_as_the_programs_entry():
    lines = ["Traceback (most recent call last):",
             '  File "<frozen runpy>", line 198, in _run_module_as_main',
             '  File "<frozen runpy>", line 88, in _run_code',
             '  File "/w/trainer/__main__.py", line 9, in <module>',
             "FloatingPointError: nan"]
    assert find_loop_death(scan_of(lines)) is not None


def test_the_interpreters_fatal_line_is_the_loops_death():
    lines = ["step 7 loss 2.1", "Fatal Python error: Segmentation fault", "", "Current thread 0x00007f (most recent call first):",
             '  File "/w/train.py", line 301 in train_step']
    ld = find_loop_death(scan_of(lines))
    assert ld is not None and ld.exc == "" and "segfault" in ld.message


def test_the_rank_whose_loop_died_is_named_while_the_others_wait():
    body = run_py(LOOP)
    lines = ["[rank0]:step 1 loss 2.5", "[rank1]:step 1 loss 2.5"]
    for line in body:  # rank 1 dies; rank 0 logs a warning between its lines (waiting in the all-reduce)
        lines.append("[rank1]:" + line)
        if line.startswith("Traceback"):
            lines.append("[rank0]:WARNING: waiting for rank 1 in ALLREDUCE")
    lines.append("[rank0]:step 2 loss 2.4")  # another rank's progress does not revive rank 1's loop
    ld = find_loop_death(scan_of(lines))
    assert ld is not None and ld.rank == "1" and ld.ranks == ("1",) and ld.exc == "FloatingPointError"
    text = describe(ld, "held by 1 non-daemon thread (pt_nccl_watchdg)")
    assert text.startswith("rank 1's training loop raised FloatingPointError at "), text


def test_a_death_counts_once_the_process_outlived_it():
    ld = find_loop_death(scan_of(run_py(LOOP)), now=1000.0)
    assert unconfirmed_s(ld, now=1000.0) == LOOP_CONFIRM_S
    assert unconfirmed_s(ld, now=1000.0 + LOOP_CONFIRM_S) == 0.0
    assert unconfirmed_s(None) == 0.0


def test_the_threads_that_hold_the_process_are_read_from_proc():
    """The probe runs for real here: this test's own process, with three named threads of its own."""
    import ctypes
    import os
    import threading

    stop = threading.Event()
    ready = threading.Barrier(4)

    def named(n: str) -> None:
        ctypes.CDLL(None).prctl(15, n.encode(), 0, 0, 0)  # PR_SET_NAME, as jobsim's drafters do
        ready.wait()
        stop.wait()

    ts = [threading.Thread(target=named, args=(f"probe-t{i}",), daemon=True) for i in range(3)]
    for t in ts:
        t.start()
    ready.wait()
    try:
        out = subprocess.run(["sh", "-c", threads_command([os.getpid()])], capture_output=True, text=True, timeout=10).stdout
    finally:
        stop.set()
    threads = parse_threads(out)
    mine = threads[os.getpid()]
    assert {"probe-t0", "probe-t1", "probe-t2"} <= set(mine)
    assert f"\n{os.getpid()} {os.getpid()} " not in "\n" + out  # the main thread itself is left out
    assert f"@p {os.getpid()} " in out


def test_what_holds_the_process_in_words():
    out = "@p 4242 python3\n4242 4250 drafter-2\n4242 4248 drafter-0\n4242 4249 drafter-1\ngarbage\n@p 4240 sh\n"
    threads = parse_threads(out)
    assert threads == {4242: ["drafter-0", "drafter-1", "drafter-2"]}  # a wrapping shell is no job process
    assert held_by(threads) == "held by 3 threads (drafter-0, drafter-1, drafter-2), at least one of them non-daemon"
    assert held_by({7: ["python3", "python3"]}) == "held by 2 threads (python3 ×2), at least one of them non-daemon"
    assert held_by({7: ["pt_nccl_watchdg"]}) == "held by 1 non-daemon thread (pt_nccl_watchdg)"
    assert held_by({7: [], 8: ["pt_nccl_watchdg"]}) == "held by 1 non-daemon thread (pt_nccl_watchdg of pid 8)"
    assert "no other thread" in held_by({7: []})
    assert held_by({7: ["a"], 8: ["b", "c"]}) == "held by 3 threads (pid 7: a; pid 8: b, c), at least one of them non-daemon"


def test_the_cause_says_what_when_and_how_to_end_it():
    ld = find_loop_death(scan_of(run_py(LOOP)))
    assert ld is not None
    text = describe(ld, held_by({9: ["drafter-0", "drafter-1", "drafter-2"]}))
    assert re.match(r"the training loop raised FloatingPointError at \d\d:\d\d:\d\d \(loss is nan at step 3\); "
                    r"the process is still alive, held by 3 threads \(drafter-0, drafter-1, drafter-2\), .*"
                    r": it will not exit by itself; stop it \(S in the TUI, or cockpit stop\)", text), text


def test_the_layer_comes_from_the_signature():
    lines = run_py("""
        class OutOfMemoryError(RuntimeError):
            pass
        OutOfMemoryError.__module__ = "torch"
        def step():
            raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        step()
    """)
    assert lines[-1].startswith("torch.OutOfMemoryError: CUDA out of memory")
    ld = find_loop_death(scan_of(lines))
    assert ld is not None and ld.exc == "torch.OutOfMemoryError" and ld.match.layer.value == "gpu"


def test_a_fatal_line_counts_only_as_the_interpreters_or_the_cuda_runtimes_own():
    assert find_loop_death(scan_of(["step 1 loss 2.5", "installing a SIGSEGV handler for the profiler"])) is None
    assert find_loop_death(scan_of(["step 1 loss 2.5", "see: Segmentation fault (core dumped) in the FAQ"])) is None
    cuda = ("/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [0,0,0] "
            "Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.")
    ld = find_loop_death(scan_of(["step 1 loss 2.5", cuda]))
    assert ld is not None and "device-side assert" in ld.message


def test_py_spy_names_python_threads_the_kernel_knows_only_as_python3():
    tids = {40: {41: "python3", 42: "python3", 43: "pt_nccl_watchdg"}}
    spy = ('Process 40: python3 train.py\nPython v3.11.2 (/usr/bin/python3.11)\n\n'
           'Thread 40 (idle): "MainThread"\n    _shutdown (threading.py:1583)\n'
           'Thread 41 (idle): "drafter-0"\n    wait (threading.py:327)\n'
           'Thread 42 (idle): "drafter-1"\n    wait (threading.py:327)\n')
    python_names(tids, 40, spy)
    assert tids == {40: {41: "drafter-0", 42: "drafter-1", 43: "pt_nccl_watchdg"}}  # the native thread keeps its comm
    python_names(tids, 99, spy)  # a process it does not know: nothing changes
    assert 99 not in tids


def test_a_warning_that_is_no_log_record_does_not_hide_the_death():
    lines = run_py(LOOP)
    at = lines.index("Traceback (most recent call last):")
    for warning in ("[W1203 12:08:21.153684 91451 ProcessGroupNCCL.cpp:1168] Warning: destroy_process_group() was not called",
                    "loss: nan (Error: the loss is not finite)"):
        ld = find_loop_death(scan_of(lines[:at] + [warning] + lines[at:]))
        assert ld is not None and ld.exc == "FloatingPointError", warning

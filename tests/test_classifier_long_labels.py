"""A traceback whose last exception line is long keeps the end of it, where the point often is: a
subprocess's signal, the failing value.  A child SIGKILLed under ``subprocess.run(check=True)`` is
the container's memory (as a DataLoader worker the kernel killed), not the trainer's code."""

from __future__ import annotations

from cockpit.core.layers import Layer
from cockpit.core.probes.classifier import classify_lines


def _traceback(last: str) -> list[str]:
    return ["Traceback (most recent call last):", '  File "/w/train.py", line 40, in <module>', "    evaluate()",
            '  File "/usr/lib/python3.11/subprocess.py", line 571, in run', "    raise CalledProcessError(retcode, process.args,", last]


def test_a_sigkilled_subprocess_is_named_with_its_signal_at_the_container_layer() -> None:
    args = ", ".join(f"'/data/shard-{i:05d}.tar'" for i in range(12))
    last = f"subprocess.CalledProcessError: Command '['/usr/bin/python3', '/w/eval.py', {args}]' died with <Signals.SIGKILL: 9>."
    [m] = classify_lines(_traceback(last)).errors
    assert m.kind == "subprocess-killed" and m.layer is Layer.CONTAINER, (m.kind, m.layer)
    assert "SIGKILL" in m.label


def test_a_long_exception_line_keeps_its_head_and_its_end() -> None:
    last = "ValueError: " + "x" * 300 + " the loss became nan at step 4013"
    [m] = classify_lines(_traceback(last)).errors
    assert len(m.label) <= 200 and m.label.startswith("ValueError: xxx") and m.label.endswith("nan at step 4013"), m.label

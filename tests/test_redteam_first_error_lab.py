"""Real failures between steps are named by their first cause, at their layer.

- a prompt (``input()``: a ``trust_remote_code`` question) reads the job's stdin, which cockpit
  starts on /dev/null: the ``EOFError`` traceback begins on the prompt's own line (no newline after
  a prompt).  cockpit said only "EOFError: EOF when reading a line"; it now says the job asked for
  input it cannot have;
- a checkpoint written on a full disk (the kernel's ENOSPC, from ``/dev/full``) or over a quota
  (``Errno 122``): the container's disk, not the code;
- rank 1's CUDA OOM, then rank 0's NCCL watchdog timeout and its ``terminate called``: the OOM is
  the cause (the watchdog is its consequence), at ``gpu``.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Layer, Outcome
from tests.lab.runs import final_fate, script_command

pytestmark = pytest.mark.lab


@pytest.mark.parametrize(("mode", "layer", "words"), [
    ("stdin", Layer.APP, "the job asked for input (EOFError: EOF when reading a line): its stdin had none"),
    ("enospc", Layer.CONTAINER, "disk full"),
    ("edquot", Layer.CONTAINER, "disk full"),
    ("oom-nccl", Layer.GPU, "CUDA out of memory"),
])
async def test_the_first_cause_is_named_at_its_layer(mode: str, layer: Layer, words: str, lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "refused_start.py", mode)}, verify={"settle": 3.0, "fate_interval": 0.3})
    res = await engines(cfg).attempt(mode)
    stage = res.verdict.failed_stage
    assert res.outcome is Outcome.FAILED and stage is not None and stage.name.endswith("alive"), res.verdict.summary()
    assert stage.layer is layer and stage.detail.startswith(f"exited with code 1: {words}"), stage.detail
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", layer.value) and fate.cause.startswith(f"exited with code 1: {words}"), fate
    assert "NCCL" not in fate.cause.split("(+")[0], fate

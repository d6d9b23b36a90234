"""A module the deploy left out is the config's doing (:mod:`cockpit.core.actions.left_out`).

``train.py`` imports ``mymodels``, a package of the deploy source that ``[deploy] exclude`` names
(a pattern meant for something else, or a leftover): the job fails at its import.  It read
``failed (app)``, "missing module mymodels", with the advice to install it in the environment; the
code under test never got the package.  Now it is ``untested (config)``: the fix never ran whole,
and the verdict names the path and the pattern.  A module the source does not hold is still the
code's (``failed (app)``).
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Layer, Outcome

pytestmark = pytest.mark.lab

TRAIN = "import sys\nprint('starting', flush=True)\nimport {module}\nprint('step 1 loss 1.0', flush=True)\n"


@pytest.fixture
def src(lab: Any) -> Any:
    root = Path(lab.dir) / "src"
    yield root
    for p in ("mymodels", "train.py"):
        shutil.rmtree(root / p, ignore_errors=True) if (root / p).is_dir() else (root / p).unlink(missing_ok=True)
    (root / "train.py").write_text("print('the code under test')\n")


@pytest.mark.parametrize(("module", "outcome", "layer", "words"), [
    ("mymodels", Outcome.UNTESTED, Layer.CONFIG, "mymodels is in the deploy source, but [deploy] exclude leaves it out (pattern 'mymodels*')"),
    ("nosuchpkg", Outcome.FAILED, Layer.APP, "missing module nosuchpkg"),
], ids=["excluded", "never-written"])
async def test_a_module_the_deploy_left_out_is_the_configs(module: str, outcome: Outcome, layer: Layer, words: str, src: Any, lab: Any,
                                                          lab_config: Any, engines: Any) -> None:
    (src / "mymodels").mkdir(exist_ok=True)
    (src / "mymodels" / "__init__.py").write_text("LAYERS = 4\n")
    (src / "train.py").write_text(TRAIN.format(module=module))
    ws = lab.workspace(200)
    cfg = lab_config(job={"command": shlex.join([lab.jobsim_argv()[0], f"{ws}/src/train.py"]), "workdir": f"{ws}/src"},
                     deploy={"exclude": ["__pycache__", "*.pyc", "mymodels*"]})
    res = await engines(cfg).attempt(f"import {module}")
    stage = res.verdict.failed_stage
    assert res.outcome is outcome and stage is not None, res.verdict.summary()
    assert stage.layer is layer and words in stage.detail, (stage.layer, stage.detail)
    if layer is Layer.CONFIG:
        assert "take it out of [deploy] exclude" in stage.advice, stage.advice
    else:
        assert "deploy source" not in stage.detail, stage.detail

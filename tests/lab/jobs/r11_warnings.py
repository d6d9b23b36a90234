"""A healthy trainer whose log carries Python warnings that say "Error" and "failed" (tests/test_redteam_r11_warnings_lab.py).

``python3 r11_warnings.py STEPS`` emits, through :mod:`warnings` as libraries do (``file:line:
Category: message`` and the source line under it), a ``UserWarning`` that something "will raise an
Error in a future release", a ``FutureWarning``, a ``DeprecationWarning`` and a ``RuntimeWarning``,
prints ``step N loss X`` every 50 ms for STEPS steps, ends with an evaluation whose
``ConvergenceWarning`` (scikit-learn's words: "lbfgs failed to converge", one line: the library's
source is not there to quote) is its last line, and exits 0.
"""

import sys
import time
import warnings

steps = int(sys.argv[1])
warnings.simplefilter("default")


class ConvergenceWarning(UserWarning):
    pass


def load() -> None:
    warnings.warn("Passing `max_length` to generate() is deprecated and will raise an Error in a future release; "
                  "use `max_new_tokens`", UserWarning, stacklevel=2)
    warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cuda', args...)` instead.",
                  FutureWarning, stacklevel=2)
    warnings.warn("pkg_resources is deprecated as an API; importing it failed to find 'setuptools._distutils'", DeprecationWarning, stacklevel=2)
    warnings.warn("invalid value encountered in divide (ValueError would be raised with np.errstate(all='raise'))", RuntimeWarning, stacklevel=2)


def evaluate() -> None:
    # the library's source is not where the warning says (an installed wheel's .pyc only): one line
    warnings.warn_explicit("lbfgs failed to converge (status=1): STOP: TOTAL NO. OF ITERATIONS REACHED LIMIT.", ConvergenceWarning,
                           "/usr/lib/python3/dist-packages/sklearn/linear_model/_logistic.py", 469)


load()
for step in range(1, steps + 1):
    print(f"step {step} loss {1.0 / step:.4f}", flush=True)
    time.sleep(0.05)
evaluate()

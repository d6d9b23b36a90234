"""A compiling job that writes to its inductor cache when it is stopped, as a job whose compile
workers or autotuner flush on exit does: the old job of an attempt can refill a cache until it is gone.

``cache_on_exit.py COLD_FIXTURE WARM_FIXTURE [replay_trace.py's options]``: when
``$TORCHINDUCTOR_CACHE_DIR/fxgraph/flushed-on-exit`` exists it replays ``WARM_FIXTURE`` (every graph
a cache hit), else ``COLD_FIXTURE`` (every graph a miss), through ``replay_trace.py`` (copied beside
it).  On SIGTERM it writes that entry, then exits 143.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import replay_trace  # noqa: E402  (beside this file in the container's workspace)


def _entry() -> str:
    return os.path.join(os.environ["TORCHINDUCTOR_CACHE_DIR"], "fxgraph", "flushed-on-exit")


def _flush(signum: int, frame: FrameType | None) -> None:
    os.makedirs(os.path.dirname(_entry()), exist_ok=True)
    with open(_entry(), "w") as f:
        f.write("# a graph compiled by the stopped job\n")
    print("flushed the compile cache on exit", flush=True)
    os._exit(128 + signum)


def main() -> int:
    cold, warm, *rest = sys.argv[1:]
    signal.signal(signal.SIGTERM, _flush)
    sys.argv = ["replay_trace.py", warm if os.path.exists(_entry()) else cold, *rest]
    return replay_trace.main()


if __name__ == "__main__":
    sys.exit(main())

"""A child subreaper for the local transport's shell: ``python -m cockpit.core.remote.reaper``.

Jobs are launched with ``setsid -f``, so their supervisor is orphaned at once and adopted by the
nearest *subreaper* ancestor, or PID 1.  Where PID 1 never reaps (a container or sandbox whose init
is not a real init: the seed's zombie), every stopped job would stay a zombie.  On the remote side
that is the truth cockpit reports; on this machine (the demo, local targets) cockpit avoids it by
starting its shell under this tiny process, which marks itself ``PR_SET_CHILD_SUBREAPER``, runs
``/bin/sh`` with the inherited pipes, and reaps every child until none is left.
"""

from __future__ import annotations

import ctypes
import os
import sys

PR_SET_CHILD_SUBREAPER = 36


def main() -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: behave like a plain shell
    argv = sys.argv[1:] or ["/bin/sh"]
    pid = os.fork()
    if pid == 0:
        os.execv(argv[0], argv)
    # keep no end of the shell's pipes open, so its death is seen as EOF by cockpit
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return
        except InterruptedError:
            continue


if __name__ == "__main__":
    main()

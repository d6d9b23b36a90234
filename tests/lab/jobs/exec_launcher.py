"""A launcher that execs its trainer (the same pid, a new program).

``python3 exec_launcher.py GATE``: prints its setup lines, then ``os.execv``s ``/bin/sh -c`` a shell
loop that prints ``step N loss X`` every 50 ms until GATE exists, then exits 3 with an error line.
"""

import os
import sys
import time

gate = sys.argv[1]
print("launcher: preparing the environment", flush=True)
time.sleep(0.3)
loop = ('i=0; while [ ! -e "$1" ] && [ $i -lt 1200 ]; do echo "step $i loss 1.5"; i=$((i+1)); sleep 0.05; done; '
        'echo "RuntimeError: trainer gave up" >&2; exit 3')
os.execv("/bin/sh", ["sh", "-c", loop, "sh", gate])

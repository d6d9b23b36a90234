"""A trainer whose crash is printed by ``rich`` (``rich.traceback.install()``): tests/test_redteam_rich_traceback_lab.py.

``python3 rich_traceback.py``: ten steps, then the chained traceback of a ``KeyError`` that caused a
``RuntimeError``, as rich 15 prints it into a file (boxes of frames, each exception line after its
box), on stderr, and exit 1.  The text is rich's own output, kept here: the lab's jobs use the
standard library only.
"""

import sys
import time

TRACEBACK = [
    '╭─────────────────────────────── Traceback (most recent call last) ────────────────────────────────╮',
    '│ /workspace/train.py:9 in main                                                                           │',
    '│                                                                                                  │',
    '│    6 │   raise KeyError(shard)                                                                   │',
    '│    7 def main():                                                                                 │',
    '│    8 │   try:                                                                                    │',
    '│ ❱  9 │   │   load("shard-17")                                                                    │',
    '│   10 │   except KeyError as e:                                                                   │',
    '│   11 │   │   raise RuntimeError("data shard shard-17 is missing from the index") from e          │',
    '│   12 try:                                                                                        │',
    '│                                                                                                  │',
    '│ /workspace/train.py:6 in load                                                                           │',
    '│                                                                                                  │',
    '│    3 from rich.traceback import Traceback                                                        │',
    '│    4 c = Console(file=sys.stderr, width=100, force_terminal=False, color_system=None)            │',
    '│    5 def load(shard):                                                                            │',
    '│ ❱  6 │   raise KeyError(shard)                                                                   │',
    '│    7 def main():                                                                                 │',
    '│    8 │   try:                                                                                    │',
    '│    9 │   │   load("shard-17")                                                                    │',
    '╰──────────────────────────────────────────────────────────────────────────────────────────────────╯',
    "KeyError: 'shard-17'",
    '',
    'The above exception was the direct cause of the following exception:',
    '',
    '╭─────────────────────────────── Traceback (most recent call last) ────────────────────────────────╮',
    '│ /workspace/train.py:13 in <module>                                                                      │',
    '│                                                                                                  │',
    '│   10 │   except KeyError as e:                                                                   │',
    '│   11 │   │   raise RuntimeError("data shard shard-17 is missing from the index") from e          │',
    '│   12 try:                                                                                        │',
    '│ ❱ 13 │   main()                                                                                  │',
    '│   14 except Exception:                                                                           │',
    '│   15 │   c.print(Traceback())                                                                    │',
    '│   16                                                                                             │',
    '│                                                                                                  │',
    '│ /workspace/train.py:11 in main                                                                          │',
    '│                                                                                                  │',
    '│    8 │   try:                                                                                    │',
    '│    9 │   │   load("shard-17")                                                                    │',
    '│   10 │   except KeyError as e:                                                                   │',
    '│ ❱ 11 │   │   raise RuntimeError("data shard shard-17 is missing from the index") from e          │',
    '│   12 try:                                                                                        │',
    '│   13 │   main()                                                                                  │',
    '│   14 except Exception:                                                                           │',
    '╰──────────────────────────────────────────────────────────────────────────────────────────────────╯',
    'RuntimeError: data shard shard-17 is missing from the index',
]

for step in range(10):
    print(f"step {step} loss {2.5 - step * 0.01:.3f}", flush=True)
    time.sleep(0.02)
sys.stderr.write("\n".join(TRACEBACK) + "\n")
sys.stderr.flush()
sys.exit(1)

"""Drafter workers: small models that propose tokens for the target model to verify.

Each drafter runs in its own thread and compiles its own draft block with ``minitorch.compile``
(think ``torch.compile(flex_attention)``) on its first forward pass.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time

import minitorch
from console import say

# Drafters compile at the same time: startup is three times faster than one after the other.
COMPILE_GUARD = threading.Lock()  # FX's tracing flag is process-wide: compile one drafter at a time


def flex_attention(x: float) -> float:
    return math.tanh(x) * 0.5 + x * 0.5


#: compiled once, shared by every drafter
compiled_attention = minitorch.compile(flex_attention)


class Linear:
    def __init__(self, seed: int) -> None:
        self.w = 0.9 + 0.02 * seed

    def __call__(self, x: float) -> float:
        return self.w * x


class DraftBlock:
    """A few attention layers."""

    def __init__(self, n_layers: int) -> None:
        self.layers = [Linear(i) for i in range(n_layers)]

    def __call__(self, x: float) -> float:
        for layer in self.layers:
            x = compiled_attention(layer(x))
        return x


class Drafter:
    def __init__(self, index: int, n_layers: int, start: threading.Barrier, go: threading.Event) -> None:
        self.index = index
        self.name = f"drafter-{index}"
        self.block = DraftBlock(n_layers)
        self.forward = minitorch.compile(self.block)
        self.start, self.go = start, go
        self.compiled = threading.Event()
        self.stopping = threading.Event()
        self.tokens = 0

    def run(self) -> None:
        self.start.wait()  # all drafters start together
        with COMPILE_GUARD:
            compile_drafter(self)
        self.compiled.set()
        self.go.wait()  # the trainer starts us once every drafter is compiled
        x = 0.1 * (self.index + 1)
        while not self.stopping.is_set():
            x = self.forward(x) % 1.0 + 0.01
            self.tokens += 4
            time.sleep(0.05)


def compile_drafter(drafter: Drafter) -> None:
    """The first forward pass traces and compiles the draft block (seconds on a real model)."""
    t0 = time.monotonic()
    say(f"[{drafter.name}] compiling draft block ({len(drafter.block.layers)} layers)")
    drafter.forward(0.5)
    say(f"[{drafter.name}] compiled in {time.monotonic() - t0:.2f}s")

"""The target model: 1.3B parameters on a real GPU, a few lines here.

``train.py`` compiles it (``minitorch.record_compiles``, think ``torch.compile(model)``); its batch
grows during the warm-up, and the first new size recompiles ``forward``.
"""

from __future__ import annotations


class Loss:
    """A batch's loss, a one-element "tensor": ``item()`` gives it as a Python float."""

    def __init__(self, value: float) -> None:
        self.value = value

    def backward(self) -> None:
        """Gradients (none to compute at this scale)."""

    def item(self) -> float:
        return self.value


class TargetModel:
    def __init__(self) -> None:
        self.scale = 1.0

    def forward(self, batch: list[float]) -> Loss:
        return Loss(self.scale * sum(batch) / len(batch))

"""The first word of every frame line the GPU probe prints (shared by the query and the
``/proc`` sections that follow it in the same command)."""

from __future__ import annotations

__all__ = ["MARK"]

MARK = "@@cockpit-gpu"

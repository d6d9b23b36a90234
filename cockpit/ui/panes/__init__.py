"""The panes: status line, verdict strip, processes, log, GPUs, attempt history."""

from .gpu import GpuPane
from .history import HistoryPane
from .log import LogPane
from .procs import ProcsPane
from .status import StatusLine
from .verdict import VerdictStrip

__all__ = ["GpuPane", "HistoryPane", "LogPane", "ProcsPane", "StatusLine", "VerdictStrip"]

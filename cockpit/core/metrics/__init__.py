"""Training metrics from the job's log: parsed as lines arrive, kept per attempt beside the journal.

The job reader that verify and the fate follower use (:class:`~cockpit.core.actions.jobstate.JobReader`)
hands every log line, numbered from the log's start, to the attempt's :class:`~.store.Recorder`
(the engine puts its :class:`~.store.MetricsStore` in every action context).  A cheap keyword
test drops most lines; the rest are parsed (:mod:`.parse`: ``[metrics] pattern``, then the
built-in forms), turned into points of bounded series (:mod:`.series`) and appended to
``<journal dir>/metrics/attempt-<N>.jsonl`` once per read (:mod:`.store`).  A new cockpit, or a
reader that reads the log again from its start, replays the file and adds only newer lines.
:mod:`.report` turns an attempt's metrics into the history's ``metrics`` object and samples two
attempts at matching steps (``cockpit compare``).

No textual/rich imports here: ``cockpit.core`` is UI-free.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazyface import face_getattr

if TYPE_CHECKING:  # pragma: no cover - for the type checker: at run time each name loads on first use
    from ..config.metrics import pattern_problem as pattern_problem
    from .parse import MetricParser as MetricParser
    from .parse import Reading as Reading
    from .parse import goal as goal
    from .report import at_steps as at_steps
    from .report import summary as summary
    from .report import summary_line as summary_line
    from .series import AttemptMetrics as AttemptMetrics
    from .series import Series as Series
    from .store import MetricsStore as MetricsStore
    from .store import Recorder as Recorder
    from .store import load_attempt as load_attempt
    from .store import metrics_path as metrics_path

#: this package's face: name → (module, attribute), imported on first use, so that importing one
#: module of the package (which runs this file first) never imports the others
_LAZY: dict[str, tuple[str, str]] = {
    "pattern_problem": ("..config.metrics", "pattern_problem"),
    "MetricParser": (".parse", "MetricParser"),
    "Reading": (".parse", "Reading"),
    "goal": (".parse", "goal"),
    "at_steps": (".report", "at_steps"),
    "summary": (".report", "summary"),
    "summary_line": (".report", "summary_line"),
    "AttemptMetrics": (".series", "AttemptMetrics"),
    "Series": (".series", "Series"),
    "MetricsStore": (".store", "MetricsStore"),
    "Recorder": (".store", "Recorder"),
    "load_attempt": (".store", "load_attempt"),
    "metrics_path": (".store", "metrics_path"),
}


__getattr__ = face_getattr(__name__, _LAZY, globals())


__all__ = ["MetricParser", "Reading", "goal", "pattern_problem", "Series", "AttemptMetrics", "MetricsStore", "Recorder",
           "load_attempt", "metrics_path", "summary", "summary_line", "at_steps"]

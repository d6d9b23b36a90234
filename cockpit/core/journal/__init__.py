"""The attempt journal: an append-only JSON Lines record of every attempt, plus a Markdown export.

An *attempt* is one try of a fix: note (hypothesis) → deploy → stop → clear caches → launch →
verify, ending in an honest :class:`~cockpit.core.layers.Outcome`.  The journal writes one JSON
object per line and never rewrites the file, so a crash can at worst leave one torn last line.

File format (schema version 1).  Every line has an envelope::

    {"v": 1, "ts": <unix float>, "event": <type>, "attempt": <int id>, ...}

and event-specific fields:

``attempt_started``
    ``note``, ``target`` (name), ``code_version`` (dict: ``git_commit``, ``dirty_hash``,
    ``dirty``, ``files``, ``source``; or null), ``log_path``, and who wrote it:
    ``cockpit_pid``, ``cockpit_host``, ``cockpit_start_time`` (``/proc/PID/stat`` field 22, guards
    against pid reuse) and ``boot_id`` (``/proc/sys/kernel/random/boot_id``: a reboot ends every
    writer).
``stage``
    ``action`` (deploy / clear-cache / stop / launch / verify / …) and ``stage``
    (:meth:`Stage.to_dict`): written as each stage completes, so a crash mid-action still leaves
    the evidence seen so far.
``verdict``
    ``action`` and ``verdict`` (:meth:`Verdict.to_dict`): the action's whole, authoritative
    verdict.  In the folded view it replaces the ``stage`` events of the same action that came
    before it (it also carries the ``not reached`` stages that were never written one by one).
``job``
    what launch recorded, flat: ``unit``, ``pid``, ``start_time``, ``pgid``, ``log_path`` (enough
    for a later cockpit to re-attach to or stop the job).  Later ``job`` events update earlier ones.
``attempt_finished``
    ``outcome``, ``layer``, ``summary``, ``first_error`` (dict or null), ``duration_s``,
    ``caches`` (list of ``{"path", "bytes"}`` that were cleared; null when none were cleared).
``attempt_interrupted``
    written by :meth:`Journal.recover`: ``reason``, ``writer_pid``, ``writer_host``, ``why``.
``diff``
    optional, what changed: ``files``, ``added``, ``removed``, ``diff_path``.
``fate``
    what became of the attempt's job after its verdict: ``state`` (``running``, ``finished``,
    ``died``, ``diverged``, ``stopped``, ``vanished``), ``layer``, ``cause``, ``at``, ``after_s``,
    ``last_progress``.  Appended on each change (see :mod:`cockpit.core.fate`); the folded record
    keeps the latest, and a final state is never replaced.  The outcome is never rewritten.
``stacks``
    every thread's stack of the attempt's job (a stall, ``cockpit stacks``, or before stopping a
    stalled job): ``method`` (``py-spy`` or ``proc``), ``at``, ``summary``, ``text``, ``threads``.

Ids increase from 1; the next id is the largest id seen in the file plus one (computed under the
file lock, so two cockpits never hand out the same id).

Writing: every event is one ``write`` of one line to a file opened in append mode, under
``fcntl.flock(LOCK_EX)``, then ``os.fsync`` (not for a ``stage``, nor for the verdict of an attempt's
step before its end, nor for the old job's fate recorded by an attempt's stop: a written line
survives a crash of cockpit in the page cache, and the next fsynced event, the job record or the
attempt's end, puts it on disk).  If the file does not end with a newline (a writer
died mid-line, or a write failed half-way on a full disk), a newline is written first so the torn
fragment stays a line of its own and cannot corrupt the next event.  Every string of an event is
redacted first (:mod:`cockpit.core.redact`), except the paths and names cockpit built to find its
job again (``log_path``, ``pid_file``, ``exit_file``, ``unit``…).  The file is created 0600 in a
0700 directory (:mod:`.files`).

A write that fails (disk full, read-only file system) raises nothing: the events wait in memory,
in order, are part of every read, and :attr:`Journal.fault` (a ``config``-layer
:class:`~.files.JournalFault`) names the path and the fix; the next write, or
:meth:`Journal.flush`, writes them first.  A journal path that is not a regular file (a link to
``/dev/full``) is never read.

Reading tolerates a torn last line and any undecodable line (both are skipped and counted in
:attr:`Journal.bad_lines`), unknown event types (kept: :meth:`Journal.events` yields them and
:attr:`AttemptRecord.extra` holds them) and missing fields.  Reads are incremental: only the bytes
appended since the last read are parsed.

Recovery (:meth:`Journal.recover`): an attempt that started but never finished is *open*.  It is
marked ``interrupted`` only when the cockpit that wrote it is provably gone: its pid is not
running on this host, is a zombie, now belongs to another process (start time differs), or the
host rebooted since (boot id differs).  An open attempt whose writer is still alive (another live
cockpit, or this very process) is left alone: that cockpit will finish it.  An attempt written on
another host cannot be checked and is left alone unless ``force=True``.

Layout: :mod:`.records` (event names, :class:`AttemptRecord`, :func:`fold`, the tolerant readers,
:func:`outcome_label`), :mod:`.store` (:class:`Journal`: append, incremental reads, ids, recover),
:mod:`.files` (modes, the append itself, :class:`~.files.JournalFault`),
:mod:`.writer` (is the cockpit that wrote an attempt still alive? how an open attempt reads) and :mod:`.export`
(:func:`render_markdown`).  This module re-exports their public names.

No textual/rich imports here: ``cockpit.core`` is UI-free.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazyface import face_getattr

if TYPE_CHECKING:  # pragma: no cover - for the type checker: at run time each name loads on first use
    from ..render import outcome_label as outcome_label
    from .export import LEGEND as LEGEND
    from .export import render_markdown as render_markdown
    from .files import JournalFault as JournalFault
    from .records import ATTEMPT_FINISHED as ATTEMPT_FINISHED
    from .records import ATTEMPT_INTERRUPTED as ATTEMPT_INTERRUPTED
    from .records import ATTEMPT_STARTED as ATTEMPT_STARTED
    from .records import DEFAULT_REASON as DEFAULT_REASON
    from .records import DIFF as DIFF
    from .records import ENVELOPE as ENVELOPE
    from .records import EVENT_TYPES as EVENT_TYPES
    from .records import FATE as FATE
    from .records import JOB as JOB
    from .records import SCHEMA_VERSION as SCHEMA_VERSION
    from .records import STACKS as STACKS
    from .records import STAGE as STAGE
    from .records import VERDICT as VERDICT
    from .records import AttemptRecord as AttemptRecord
    from .records import Scope as Scope
    from .records import StageRecord as StageRecord
    from .records import fold as fold
    from .records import scheduler_jobs as scheduler_jobs
    from .store import Journal as Journal
    from .store import default_journal_path as default_journal_path
    from .writer import _hostname as _hostname
    from .writer import _read_stat as _read_stat
    from .writer import as_read as as_read
    from .writer import proc_start_time as proc_start_time
    from .writer import writer_state as writer_state

#: this package's face: name → (module, attribute), imported on first use, so that importing one
#: module of the package (which runs this file first) never imports the others
_LAZY: dict[str, tuple[str, str]] = {
    "outcome_label": ("..render", "outcome_label"),
    "LEGEND": (".export", "LEGEND"),
    "render_markdown": (".export", "render_markdown"),
    "JournalFault": (".files", "JournalFault"),
    "ATTEMPT_FINISHED": (".records", "ATTEMPT_FINISHED"),
    "ATTEMPT_INTERRUPTED": (".records", "ATTEMPT_INTERRUPTED"),
    "ATTEMPT_STARTED": (".records", "ATTEMPT_STARTED"),
    "DEFAULT_REASON": (".records", "DEFAULT_REASON"),
    "DIFF": (".records", "DIFF"),
    "ENVELOPE": (".records", "ENVELOPE"),
    "EVENT_TYPES": (".records", "EVENT_TYPES"),
    "FATE": (".records", "FATE"),
    "JOB": (".records", "JOB"),
    "SCHEMA_VERSION": (".records", "SCHEMA_VERSION"),
    "STACKS": (".records", "STACKS"),
    "STAGE": (".records", "STAGE"),
    "VERDICT": (".records", "VERDICT"),
    "AttemptRecord": (".records", "AttemptRecord"),
    "Scope": (".records", "Scope"),
    "StageRecord": (".records", "StageRecord"),
    "fold": (".records", "fold"),
    "scheduler_jobs": (".records", "scheduler_jobs"),
    "Journal": (".store", "Journal"),
    "default_journal_path": (".store", "default_journal_path"),
    "_hostname": (".writer", "_hostname"),
    "_read_stat": (".writer", "_read_stat"),
    "proc_start_time": (".writer", "proc_start_time"),
    "writer_state": (".writer", "writer_state"),
    "as_read": (".writer", "as_read"),
}


__getattr__ = face_getattr(__name__, _LAZY, globals())


__all__ = [
    "SCHEMA_VERSION",
    "DEFAULT_REASON",
    "ATTEMPT_STARTED",
    "STAGE",
    "VERDICT",
    "JOB",
    "ATTEMPT_FINISHED",
    "ATTEMPT_INTERRUPTED",
    "DIFF",
    "FATE",
    "STACKS",
    "EVENT_TYPES",
    "Journal",
    "JournalFault",
    "AttemptRecord",
    "Scope",
    "StageRecord",
    "fold",
    "scheduler_jobs",
    "default_journal_path",
    "proc_start_time",
    "writer_state",
    "as_read",
    "render_markdown",
    "outcome_label",
]

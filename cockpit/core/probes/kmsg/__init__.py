"""The host's kernel messages: OOM kills, NVIDIA Xid errors, hung tasks, segfaults.

Kernel messages are read **on the host** (a container sees none, or only its own namespace's
view): run :func:`kmsg_command` with the transport's ``run_host``, and read its output with
:func:`parse_kmsg`, which never raises and returns a :class:`KmsgReport` of findings.

==================  ===========================================================================
module              what lives there
==================  ===========================================================================
:mod:`.command`     :func:`kmsg_command` (dmesg, else the journal)
:mod:`.lines`       :class:`KmsgLine` and the timestamp formats
:mod:`.parse`       :func:`parse_kmsg` and :class:`KmsgReport`
:mod:`.findings`    Xid, lost-GPU, hung-task and segfault findings
:mod:`.oom`         OOM-kill findings and :func:`oom_killed`
:mod:`.xid`         :data:`XID_MEANINGS`: what each Xid means and what to do
==================  ===========================================================================
"""

from __future__ import annotations

from .command import kmsg_command
from .lines import KmsgLine
from .oom import oom_killed
from .parse import KmsgReport, parse_kmsg
from .xid import XID_MEANINGS, xid_meaning

__all__ = [
    "kmsg_command",
    "KmsgLine",
    "KmsgReport",
    "parse_kmsg",
    "oom_killed",
    "XID_MEANINGS",
    "xid_meaning",
]

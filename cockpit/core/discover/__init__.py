"""Discovery: what runs on a host, read in ONE SSH round trip, for ``cockpit init``.

* :mod:`.script`: the POSIX sh script (runtimes, container configs, each running target's
  training processes and zombies);
* :mod:`.parse`: its output → :class:`HostReport` (:class:`TargetCandidate`, :class:`JobCandidate`);
* :mod:`.rank`: which candidate a config is written for, best first;
* :mod:`.probe`: run it over cockpit's SSH transport (host keys always checked);
* :mod:`.write`: the config text, each value with its source, checked by the real loader.

Discovery only reads: it starts, stops and changes nothing on the host.
"""

from __future__ import annotations

from .model import HostReport, JobCandidate, SlurmJob, TargetCandidate, Zombie
from .parse import gpu_lines, parse_report
from .probe import DiscoverySpec, discover, run_discovery
from .rank import Candidate, rank
from .write import FileExists, attempt_log_path, config_text, write_config

__all__ = ["HostReport", "JobCandidate", "TargetCandidate", "SlurmJob", "Zombie", "parse_report", "gpu_lines", "DiscoverySpec",
           "discover", "run_discovery", "Candidate", "rank", "FileExists", "attempt_log_path", "config_text", "write_config"]

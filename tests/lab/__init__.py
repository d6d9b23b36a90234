"""cockpit's test lab: a real OpenSSH sshd, a Proxmox ``pct`` emulator whose containers are real
PID + mount namespaces, an ``nvidia-smi`` emulator driven by a state file, and a training-job
simulator (``jobsim.py``).

    from tests.lab import Lab
    with Lab() as lab:
        lab.add_container(200)
        print(lab.config_toml())

For pytest, ``from tests.lab.fixtures import lab`` (a session-scoped fixture).
By hand: ``python -m tests.lab up``.
"""

from .sshd import DEFAULT_CT, Lab, LabError, lab_unavailable_reason, to_toml
from .util import WaitTimeout, await_for, free_port, wait_for

__all__ = ["DEFAULT_CT", "Lab", "LabError", "WaitTimeout", "free_port", "lab_unavailable_reason", "to_toml",
           "wait_for", "await_for"]

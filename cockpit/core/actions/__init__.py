"""The actions: each is ``async (ctx, …) -> Verdict`` built stage by stage (:mod:`.base`).

``deploy``, ``cache`` (clear caches), ``job`` (launch and stop, by recorded pid, process group and
start time), ``strays`` (copies of the job cockpit did not start), ``jobstate`` (one probe of the
job's processes, exit file and log), ``verify`` (healthy, not "seen once"), ``cause`` (why a job
died, with its layer), ``reboot``.  They may import ``layers``, ``remote`` and ``probes``; never the
engine, the journal or any UI.
"""

"""Slurm: the job lives in the cluster's scheduler (``[target] runtime = "slurm"``, ``[slurm]``).

The target is a login node reached over the same SSH session.  These modules implement the Slurm
runtime (:mod:`cockpit.core.runtimes.slurm`): its scheduler, which :func:`cockpit.core.actions.job.launch`
and ``stop`` hand over to, and :class:`~.state.SlurmReader`, the job reader class it names.  Everything else
(deploy, clear caches, the log scan, signatures, the settle window, the journal) is unchanged.

* launch  = ``sbatch --parsable`` (:mod:`.launch`); the job id is the record, not a pid;
* stop    = ``scancel`` of every job of the target cockpit recorded that is still queued or running
  (:mod:`.own`), then ``scancel --signal=KILL`` after ``[job] stop_timeout``, confirmed by ``squeue``;
* verify and fate from Slurm's own states (:mod:`.scontrol`): PENDING is *pending* (the reason and
  the queue position say why), a request that cannot start (nodes drained or down) is ``host``,
  RUNNING is judged on the log like any job, and NODE_FAIL → host, OUT_OF_MEMORY → container,
  TIMEOUT / PREEMPTED → process, FAILED → its log (a traceback → app) and exit code; CANCELLED
  (by cockpit or anyone) is the fate ``stopped``.
"""

"""The core: everything cockpit knows about a target, with no UI in it (a test proves no Textual or
Rich import reaches it).

What lives here, and what it may import:

``engine.py``       the one door: one :class:`~.engine.Engine` per target owns the connection, the
                    observer, the attempt loop's engine side, the job and its fate, and the journal;
                    it speaks in typed events (``events.py``).  Front ends import the engine, the
                    events and the plain data types, nothing deeper is needed.
``action_table.py`` the one table of actions (id, label, help, destructive, confirm text).
``attempt.py``      the attempt sequence; ``fate.py`` what became of a job after its verdict.
``actions/``        deploy, clear caches, stop, launch, verify, reboot, strays: each builds a verdict.
``user_actions.py`` the user's ``[[actions]]``: run one, its verdict and its own answer;
                    ``user_template.py`` their fields, checks and shell-quoting.
``remote/``         transports (SSH, local), the persistent framed session, runtimes.
``probes/``         parsers: ps, nvidia-smi, logs, kernel messages, signatures → typed data.
``journal/``        the append-only attempt journal: store, records, export.
``loop/``, ``changes/``, ``reload.py``, ``fswatch.py``   the edit → attempt loop and live reload.
``layers.py``       the vocabulary: layers, stages, verdicts, outcomes, findings.

Imports run one way: ``layers`` ← ``probes``/``remote`` ← ``actions`` ← ``attempt``/``fate`` ←
``engine``.  Nothing in ``core`` imports ``cockpit.ui`` or ``cockpit.cli``.
"""

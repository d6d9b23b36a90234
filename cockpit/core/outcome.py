"""What the job's log says about an attempt's outcome: did its code run, and what it noticed.

:func:`code_ran` is the evidence :func:`~cockpit.core.layers.outcome_of` needs to tell ``failed``
(the code ran and failed, at any layer) from ``untested`` (it never ran): progress lines, and the
lines the job itself wrote.  The shell's own lines do not count as the job's output: a job whose
only line is ``Segmentation fault`` or ``sh: 1: python: not found`` never got to run its code.

:func:`log_findings` lists what the log noticed without failing the run (a traceback a WARNING
record carried, torch.compile's eager fallback) and, for a job that exited 0, its errors: a
finished job's errors are findings, not its death.
"""

from __future__ import annotations

import re
from typing import Any

from .layers import Finding, Outcome, Ran, Severity, Verdict, outcome_of
from .probes.sig_table import BUILTIN, SHELL_CRASHES

__all__ = ["judge_attempt", "code_ran", "log_findings", "findings_text", "handled_last", "last_words", "said_failed", "SHELL_KINDS"]

#: signature ids of lines the job's shell (not the job) wrote
SHELL_KINDS = frozenset({"killed", *(f"shell-{sig.lower()}" for _, sig in SHELL_CRASHES)})
_SHELL_SIGS = tuple(s for s in BUILTIN if s.kind in SHELL_KINDS)
#: at most this many findings are listed
MAX_FINDINGS = 8
#: the shell's own line for a child ended by a signal that has no signature (dash: ``Terminated``;
#: bash: ``sh: line 1:  1234 Terminated  python3 train.py``): never the job's last words
_SHELL_SIGNAL_LINE = re.compile(r"^(?:\S*: line \d+: +\d+ +)?(?:Terminated|Hangup|Alarm clock|User defined signal [12]|Quit)"
                                r"(?: \(core dumped\))?(?: .*)?$")


def code_ran(scan: Any) -> Ran | None:
    """The evidence that the job's code ran, from a :class:`~cockpit.core.actions.jobstate.LogScan`
    (None when no log was read: nothing to say)."""
    if scan is None:
        return None
    shell = 0
    classifier = getattr(scan, "classifier", None)
    if classifier is not None:
        shell = sum(n for kind, n in classifier.counts.items() if kind in SHELL_KINDS)
    return Ran(progress=int(scan.progress_count), lines=max(0, int(scan.lines) - shell))


def judge_attempt(verdict: Verdict, scan: Any, *, job_started: bool) -> tuple[Outcome, dict[str, Any] | None]:
    """An attempt's outcome and its first error (the log's first, else the failed stage's), the
    same for every action that journals an attempt (attempt, relaunch, launch, adoption)."""
    outcome = outcome_of(verdict, job_started=job_started, ran=code_ran(scan))
    first_error = scan.error() if scan is not None else None
    fs = verdict.failed_stage
    if first_error is None and fs is not None and fs.data.get("first_error"):
        first_error = fs.data["first_error"]
    return outcome, first_error


def log_findings(scan: Any, *, errors: bool = False) -> list[Finding]:
    """The log's warnings (each label once, in order), and with ``errors`` its errors too."""
    classifier = getattr(scan, "classifier", None)
    if classifier is None:
        return []
    seen: set[str] = set()
    out: list[Finding] = []
    latest: dict[object, Any] = {}
    for m in classifier.matches:  # one entry per chain: its latest version
        latest[m.chain_id if m.chain_id is not None else ("line", m.line_no)] = m
    for m in latest.values():
        if m.is_error and not errors:
            continue
        if m.severity is Severity.INFO or m.label in seen or m.kind == "python-traceback-incomplete" and not m.is_error:
            continue
        seen.add(m.label)
        summary = m.label if not m.thread else f"{m.label} (thread {m.thread})"
        out.append(Finding(m.layer, m.kind, summary, m.advice, m.severity, {"line": m.line, "line_no": m.line_no}))
        if len(out) >= MAX_FINDINGS:
            break
    return out


def findings_text(findings: list[Finding]) -> str:
    """``2 errors and 1 warning in the log: A; B; C`` (empty when there are none)."""
    if not findings:
        return ""
    n_err = sum(1 for f in findings if f.severity is Severity.ERROR)
    n_warn = len(findings) - n_err
    parts = []
    if n_err:
        parts.append(f"{n_err} error{'s' if n_err > 1 else ''}")
    if n_warn:
        parts.append(f"{n_warn} warning{'s' if n_warn > 1 else ''}")
    return f"{' and '.join(parts)} in the log: " + "; ".join(f.summary[:160] for f in findings)


def handled_last(scan: Any) -> str | None:
    """The label of the last traceback a log record below ERROR carried, when no progress line came
    after it: a job that dies right after a "handled" error died of it, whatever its level said."""
    classifier = getattr(scan, "classifier", None)
    if classifier is None:
        return None
    for m in reversed(classifier.matches):
        # a traceback its log record lowered below ERROR, not a summary that is a warning of its own
        # (torchrun's ChildFailedError: the worker's failure is said elsewhere)
        if m.traceback and not m.is_error and m.kind != "python-traceback-incomplete" and m.signature.severity is not Severity.WARNING:
            return str(m.label) if m.line_no > int(getattr(scan, "progress_no", 0) or 0) else None
    return None


def _shell_said(text: str) -> bool:
    """``Terminated`` alone (dash), or bash's ``…: line N: PID Terminated …`` report."""
    m = _SHELL_SIGNAL_LINE.match(text)
    return m is not None and (text.split(" (")[0] in ("Terminated", "Hangup", "Alarm clock", "Quit", "User defined signal 1",
                                                      "User defined signal 2") or ": line " in text)


# GNU time's report: the default format's two usage lines (after "Command exited with non-zero
# status N" or "Command terminated by signal N" when so), or -v's block of tab-indented fields
_TIME_STATUS = re.compile(r"^Command (?:exited with non-zero status \d+|terminated by signal \d+)$")
_TIME_USAGE = re.compile(r"^\d+\.\d+user \d+\.\d+system \S+elapsed \S+CPU \(|^\d+inputs\+\d+outputs \(\d+major\+\d+minor\)pagefaults \d+swaps$")
_TIME_FIELD = re.compile(r"^\t[A-Z][^:]*(?:\([^)]*\))?[^:]*: ")


def _time_report_at(lines: list[str]) -> int | None:
    """Where GNU time's report at the end of ``lines`` starts, or None when they do not end with one."""
    i = len(lines)
    while i and not lines[i - 1].strip():
        i -= 1
    end = i
    if i and lines[i - 1].startswith("\tExit status: "):  # -v: fields up to "Command being timed"
        while i and _TIME_FIELD.match(lines[i - 1]) and not lines[i - 1].startswith("\tCommand being timed: "):
            i -= 1
        if not i or not lines[i - 1].startswith("\tCommand being timed: "):
            return None
        i -= 1
    elif i >= 2 and _TIME_USAGE.match(lines[i - 1].strip()) and _TIME_USAGE.match(lines[i - 2].strip()):
        i -= 2
    if i == end:
        return None
    return i - 1 if i and _TIME_STATUS.match(lines[i - 1].strip()) else i


def last_words(scan: Any) -> str | None:
    """The job's own last line when it is not a progress line (``non-finite loss (inf) at
    iteration 65, aborting the run``): a job that exits without a traceback often says why there.
    Not a shell's signal report, nor GNU ``time``'s resource report after the trainer
    (``/usr/bin/time [-v] python train.py``: "Command exited with non-zero status 1", its usage
    lines, or ``-v``'s block that ends with ``Exit status: N``)."""
    lines = list(getattr(scan, "tail_lines", None) or [])
    at = _time_report_at(lines)
    for line in reversed(lines if at is None else lines[:at]):
        text = line.strip()
        if not text or any(sig.search(line) for sig in _SHELL_SIGS) or _shell_said(text):
            continue
        return None if line == getattr(scan, "last_progress", None) else text[:200]
    return None


#: a last line that says the run failed: an exception's class as raised or printed (``RuntimeError('…')``,
#: ``OSError: …``: case-sensitive), a word of failure (``training failed``, ``aborting``, ``crashed``)
#: that is no metric's name (``failure rate 0.1``, ``failed: 0``), or a line that begins ``Error:``
#: with words after it.  ``error`` alone is ML's vocabulary (``val error 0.12``, ``mean squared
#: error``): never enough.
_SAYS_FAILED = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception)\b\s*[:(]"
    r"|(?i:\b(?:fail(?:ed|ure)?|abort(?:ed|ing)?|crash(?:ed)?)\b(?!\s*(?:rate|count|[:=]?\s*[-+]?[\d.])))"
    r"|(?i:^\s*(?:error|fatal)\b\s*[:!][ \t]*(?=[^\s\d.+\-]))")


#: a Python warning as :mod:`warnings` prints it (``…/_logistic.py:469: ConvergenceWarning: lbfgs failed
#: to converge``): a library's word about the run, never the run saying it failed
_WARNING_LINE = re.compile(r"^\S.*?:\d+: (?:\w+\.)*[A-Z]\w*Warning: ")


def said_failed(scan: Any) -> str | None:
    """The job's own last line (:func:`last_words`) when it says the run failed (``training failed:
    RuntimeError('checkpoint shard 3 is corrupt')``), else None: a job that caught its error, said
    so and exited 0 finished by its exit status, and its last words are where the error is named."""
    said = last_words(scan)
    return said if said is not None and _SAYS_FAILED.search(said) and not _WARNING_LINE.match(said) else None


#: a last line that says training reached its end (``training finished``, ``Training complete.``,
#: ``Done!``, ``finished training``): a live job silent after it is held at exit, not stalled in training
_SAYS_ENDED = re.compile(
    r"(?i:\b(?:training|train|fit|fitting|run|job|all epochs)\b.*\b(?:finished|complete[d]?|done|ended|over)\b"
    r"|\b(?:finished|completed?|done)\s+(?:training|train|fitting)\b"
    r"|^\W*(?:done|finished|complete[d]?)\W*$)")


def said_ended(scan: Any) -> str | None:
    """The job's own last line (:func:`last_words`) when it says training reached its end and not
    that it failed (``training finished``), else None."""
    said = last_words(scan)
    return said if said is not None and _SAYS_ENDED.search(said) and not _SAYS_FAILED.search(said) else None

"""The one way a job's log is classified: the built-in signatures, the user's ``[[signatures]]``
and ``[verify] ignore_signatures``, the same for the verdict's reading (:func:`cockpit.core.actions.jobstate.make_scan`)
and the live log the observer follows, so the pane never marks as an error what the verdict ignores."""

from __future__ import annotations

from collections.abc import Sequence

from .config import Config
from .probes.signatures import Classifier, Signature, load_signatures

__all__ = ["classifier_for", "user_signatures"]


def user_signatures(cfg: Config) -> list[Signature]:
    """The config's ``[[signatures]]``, compiled (load once, reuse for every classifier)."""
    return load_signatures(cfg.user_signatures())


def classifier_for(cfg: Config, user: Sequence[Signature] | None = None) -> Classifier:
    """A fresh classifier for one reading of the log; ``user``: signatures compiled already."""
    return Classifier(user=list(user) if user is not None else user_signatures(cfg), ignore=frozenset(cfg.verify.ignore_signatures))

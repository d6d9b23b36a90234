"""Log signatures and the log classifier: the public face of four modules.

* :mod:`.sig_model`: :class:`Signature` (regex → layer, label, advice), :class:`Match`, and
  :func:`load_signatures` for user signatures from config;
* :mod:`.sig_table`: the built-in table, data only (:data:`BUILTIN`, :data:`TRACEBACK`,
  :data:`INCOMPLETE_TRACEBACK`);
* :mod:`.classifier`: :class:`Classifier`, incremental: line signatures, traceback assembly,
  first and final error (its module docstring tells how);
* :mod:`.sig_prefilter` and :mod:`.tb_parts`: the classifier's keyword prefilter, and the line
  shapes and records of traceback assembly.

Import from here; the split is an internal matter.
"""

from __future__ import annotations

from .classifier import Classifier, classify_lines
from .sig_model import Match, Signature, derive_keywords, load_signatures
from .sig_prefilter import trie_regex
from .sig_table import BUILTIN, INCOMPLETE_TRACEBACK, TRACEBACK

# private names the tests reach for, under their old spelling
_derive_keywords = derive_keywords
_trie_regex = trie_regex

__all__ = [
    "Signature",
    "Match",
    "BUILTIN",
    "TRACEBACK",
    "INCOMPLETE_TRACEBACK",
    "load_signatures",
    "Classifier",
    "classify_lines",
]

"""Log signatures and the log classifier: the public face of the modules that implement them.

* :mod:`.sig_model`: :class:`Signature` (regex → layer, label, advice), :class:`Match`, and
  :func:`load_signatures` for user signatures from config;
* :mod:`.sig_table`: the built-in table, data only (:data:`BUILTIN`, :data:`TRACEBACK`,
  :data:`INCOMPLETE_TRACEBACK`);
* :mod:`.classifier`: :class:`Classifier`, incremental: line signatures, traceback chains, first
  and final error, dead threads, ignored signature ids (its module docstring tells how);
  :func:`unknown_signature_ids` checks ids from config;
* :mod:`.sig_prefilter`, :mod:`.tb_assembler` and :mod:`.tb_parts`: the classifier's keyword
  prefilter, its traceback state machine, and the line shapes and records that one uses.

Import from here; the split is an internal matter.
"""

from __future__ import annotations

from .classifier import Classifier, classify_lines, signature_ids, unknown_signature_ids
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
    "signature_ids",
    "unknown_signature_ids",
]

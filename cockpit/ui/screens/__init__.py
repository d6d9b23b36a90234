"""Modal screens: help, confirm (destructive actions), hypothesis prompt, verdict detail."""

from .confirm import ConfirmScreen
from .help import HelpScreen
from .prompt import HypothesisScreen
from .verdict import VerdictScreen

__all__ = ["ConfirmScreen", "HelpScreen", "HypothesisScreen", "VerdictScreen"]

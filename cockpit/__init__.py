"""cockpit: a terminal cockpit for debugging ML training jobs on remote GPU machines."""

__version__ = "0.1.0"

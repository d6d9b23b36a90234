from . import config
from .eval_frame import OptimizedFunction, optimize

__all__ = ["config", "optimize", "OptimizedFunction"]

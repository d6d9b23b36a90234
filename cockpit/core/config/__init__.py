"""cockpit's configuration, the bottom floor of the core: TOML → typed, validated dataclasses.

Rooms, bottom up: :mod:`.names` (what a name or a command word may be) and :mod:`.errors`
(:class:`ConfigError`) import nothing of cockpit's but the layer names; :mod:`.sections` and the
section modules beside it (:mod:`.metrics`, :mod:`.redact`, :mod:`.slurm`, :mod:`.targets`,
:mod:`.actions`) are the schema; :mod:`.schema` holds the whole :class:`Config`; :mod:`.coerce`
turns TOML values into sections; :mod:`.load` finds, reads and cross-checks a file.  Nothing
here imports the engine, the UI or the CLI: they all stand on this.
"""

from __future__ import annotations

from ..paths import check_cache_path, norm_remote_path
from .coerce import section_docs
from .errors import ConfigError
from .load import find_config, load_config, parse_config, user_config_path
from .schema import Config
from .sections import (
    CacheConfig,
    DeployConfig,
    GPUConfig,
    JobConfig,
    JournalConfig,
    LoopConfig,
    NotifyConfig,
    SignatureConfig,
    SSHConfig,
    TargetConfig,
    UIConfig,
    VerifyConfig,
)

__all__ = ["Config", "ConfigError", "CacheConfig", "DeployConfig", "GPUConfig", "JobConfig", "JournalConfig", "LoopConfig",
           "NotifyConfig", "SignatureConfig", "SSHConfig", "TargetConfig", "UIConfig", "VerifyConfig", "load_config",
           "find_config", "parse_config", "user_config_path", "check_cache_path", "norm_remote_path", "section_docs"]

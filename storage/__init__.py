"""The log engine: partitions stored in Apache Kafka's on-disk format, with recovery.

Imports only `protocol` (batch headers, error codes); never `minibroker`.

The package itself imports nothing: `from minibroker_storage.config import LogConfig` (what the broker's
config needs before it listens) must not pull in the append path (minibroker_storage.log with the log
validator, the record formats and the producer state), which an empty data dir needs only at its
first Produce (issue 22, tests/test_startup_imports.py). The public names below still work as
`minibroker_storage.Log` etc.: each is imported from its module on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from minibroker_protocol.compiled import extend_path

# the compiled twins of the hot modules first, when built and current (minibroker_protocol.compiled)
__path__ = extend_path(__path__, __name__)

if TYPE_CHECKING:
    from minibroker_storage.config import LogConfig
    from minibroker_storage.file_region import FileRegion
    from minibroker_storage.log import FetchDataInfo, Log, LogAppendInfo
    from minibroker_storage.log_manager import LogManager

_PUBLIC = {
    "FetchDataInfo": "minibroker_storage.log", "FileRegion": "minibroker_storage.file_region", "Log": "minibroker_storage.log",
    "LogAppendInfo": "minibroker_storage.log", "LogConfig": "minibroker_storage.config", "LogManager": "minibroker_storage.log_manager",
}

__all__ = ["FetchDataInfo", "FileRegion", "Log", "LogAppendInfo", "LogConfig", "LogManager"]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'minibroker_storage' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

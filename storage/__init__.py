"""The log engine: partitions stored in Apache Kafka's on-disk format, with recovery.

Imports only `protocol` (batch headers, error codes); never `minibroker`.

The package itself imports nothing: `from storage.config import LogConfig` (what the broker's
config needs before it listens) must not pull in the append path (storage.log with the log
validator, the record formats and the producer state), which an empty data dir needs only at its
first Produce (issue 22, tests/test_startup_imports.py). The public names below still work as
`storage.Log` etc.: each is imported from its module on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storage.config import LogConfig
    from storage.file_region import FileRegion
    from storage.log import FetchDataInfo, Log, LogAppendInfo
    from storage.log_manager import LogManager

_PUBLIC = {
    "FetchDataInfo": "storage.log", "FileRegion": "storage.file_region", "Log": "storage.log",
    "LogAppendInfo": "storage.log", "LogConfig": "storage.config", "LogManager": "storage.log_manager",
}

__all__ = ["FetchDataInfo", "FileRegion", "Log", "LogAppendInfo", "LogConfig", "LogManager"]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'storage' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

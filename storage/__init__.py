"""The log engine: partitions stored in Apache Kafka's on-disk format, with recovery.

Imports only `protocol` (batch headers, error codes); never `minibroker`.
"""

from storage.config import LogConfig
from storage.file_region import FileRegion
from storage.log import FetchDataInfo, Log, LogAppendInfo
from storage.log_manager import LogManager

__all__ = ["FetchDataInfo", "FileRegion", "Log", "LogAppendInfo", "LogConfig", "LogManager"]

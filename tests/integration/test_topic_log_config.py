"""A topic's storage LogConfig comes from the broker's config model alone (minibroker.config
.to_log_config): at creation, after AlterConfigs, and after a restart, when the log manager opens
the logs from the stored overrides."""

from __future__ import annotations

from minibroker.testing import BrokerThread
from tests.integration.helpers import create_topic


def log_config(b: BrokerThread, topic: str):
    return b.call(lambda broker: broker.log_manager.get_log(topic, 0).config)


def test_overrides_reach_the_log_at_creation_and_after_a_restart(tmp_path):
    data = tmp_path / "data"
    overrides = {"message.timestamp.difference.max.ms": "60000", "message.format.version": "0.10.2",
                 "cleanup.policy": "compact,delete", "segment.bytes": "100000"}
    with BrokerThread(data, overrides={"log.retention.ms": 5000}) as b:
        create_topic(b, "t", 1, overrides)
        created = log_config(b, "t")
        # the deprecated bound fills both KIP-937 bounds; the format version decided the magic
        assert (created.message_timestamp_before_max_ms, created.message_timestamp_after_max_ms) == (60000, 60000)
        assert created.record_version == 1 and created.compact and created.delete
        assert (created.segment_bytes, created.retention_ms) == (100000, 5000)
    with BrokerThread(data, overrides={"log.retention.ms": 5000}) as b:
        assert log_config(b, "t") == created

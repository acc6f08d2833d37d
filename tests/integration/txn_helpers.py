"""What the transaction tests share: the broker config they run with, the control batches and
LSO of a partition read back from storage, and a confluent-kafka consumer that reads a topic whole."""

from __future__ import annotations

import time

from minibroker.testing import BrokerThread
from minibroker_protocol.records.v2 import parse_control_record
from tests.helpers import TEST_OVERRIDES
from tests.integration.helpers import Deadline, stored_batches, unique

TXN_OVERRIDES = {
    **TEST_OVERRIDES,
    "transaction.state.log.num.partitions": 4,
    "offsets.topic.num.partitions": 4,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 200,
}
PARTS = 3


def markers(b: BrokerThread, topic: str, partition: int) -> list[tuple[int, int]]:
    """(offset, control type) of each control batch in a partition."""
    return [(batch.base_offset, parse_control_record(batch.records[0]).type)
            for batch in stored_batches(b, topic, partition) if batch.is_control]


def lso_and_hw(b: BrokerThread, topic: str, partition: int) -> tuple[int, int]:
    return b.call(lambda br: (br.get_log(topic, partition).last_stable_offset,
                              br.get_log(topic, partition).high_watermark))


# -- confluent-kafka -----------------------------------------------------------------------------


def confluent_read_all(b: BrokerThread, topic: str, isolation: str, expect: int) -> list[tuple[int, bytes]]:
    """(partition, value) of everything a fresh consumer reads, waiting for `expect` records and
    then a little longer to catch extra ones."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": unique("g"), "isolation.level": isolation,
                  "enable.auto.commit": False, "enable.partition.eof": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTS)])
    got: list[tuple[int, bytes]] = []
    d = Deadline()
    settle = None
    try:
        while d:
            msg = c.poll(0.2)
            if msg is not None:
                assert not msg.error(), msg.error()
                got.append((msg.partition(), msg.value()))
            if len(got) >= expect:
                settle = settle or time.monotonic() + 0.5
                if time.monotonic() > settle:
                    break
    finally:
        c.close()
    return got

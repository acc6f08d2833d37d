"""Producer id blocks for the brokers' transaction coordinators (Kafka: ProducerIdControlManager, KIP-730).

A broker asks (AllocateProducerIds) and gets the next block of 1000 ids; the controller writes a
ProducerIdsRecord with the id after the block, so no id is handed out twice, across restarts too.
"""

from __future__ import annotations

from minibroker.metadata.image import MetadataImage
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.metadata_serde import ApiMessageAndVersion

PRODUCER_ID_BLOCK_SIZE = 1000  # Kafka: ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
MAX_PRODUCER_ID = (1 << 63) - 1


def allocate(image: MetadataImage, broker_id: int, broker_epoch: int) -> tuple[ApiMessageAndVersion, int, int]:
    """(the record, first id, count) of the next block for `broker_id`."""
    start = image.next_producer_id
    if start > MAX_PRODUCER_ID - PRODUCER_ID_BLOCK_SIZE:
        raise OverflowError("Exhausted all producerIds as the next block's end producerId has exceeded the int64 type "
                            "limit")
    record = mr.PRODUCER_IDS_RECORD(broker_id=broker_id, broker_epoch=broker_epoch,
                                    next_producer_id=start + PRODUCER_ID_BLOCK_SIZE)
    return ApiMessageAndVersion(record, 0), start, PRODUCER_ID_BLOCK_SIZE

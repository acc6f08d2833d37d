"""Producer ids that never repeat, across restarts and crashes (Kafka: ProducerIdManager and the
controller's producer id blocks, KIP-730).

Theory of operation. Kafka hands producer ids out in blocks of 1000: the controller records
each block it grants in its metadata log (ZooKeeper kept the latest one in the znode
`/latest_producer_id_block`), and a broker serves ids from its current block until it needs
the next. A single broker is its own controller, so the record of the latest granted block is
a small file in the data directory, `latest_producer_id_block`, holding what the znode held:

    {"version":1,"broker":<node id>,"block_start":"<first id>","block_end":"<last id>"}

A new block is written (atomically, fsynced) before the first id of it is handed out, so after
any crash the next block starts above every id ever returned. If the file is lost, the broker
starts above the largest producer id it can see (`ensure_above`: the ids in the partitions'
producer state and in __transaction_state), which is what a crash could not have hidden.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_storage.log_files import atomic_write

log = logging.getLogger("minibroker.coordinator.producer_ids")

PRODUCER_ID_BLOCK_SIZE = 1000  # Kafka: ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
BLOCK_FILE = "latest_producer_id_block"
MAX_PRODUCER_ID = 2**63 - 1


class ProducerIdManager:
    def __init__(self, data_dir: Path, broker_id: int, block_size: int = PRODUCER_ID_BLOCK_SIZE):
        self.path = Path(data_dir) / BLOCK_FILE
        self.broker_id = broker_id
        self.block_size = block_size
        self._next = 0  # next id to hand out
        self._block_end = -1  # last id of the current block (inclusive)
        self._granted_end = self._read_granted_end()  # last id of the latest block ever granted
        # a KRaft broker's blocks come from the controller (AllocateProducerIds, KIP-730): the next
        # block (first, last), or a KafkaError while it is being fetched (minibroker.metadata.producer_id_blocks)
        self.block_source: Callable[[], tuple[int, int]] | None = None

    def _read_granted_end(self) -> int:
        try:
            data = json.loads(self.path.read_text())
            return int(data["block_end"])
        except FileNotFoundError:
            return -1
        except (ValueError, KeyError, TypeError) as e:
            raise RuntimeError(f"unreadable {self.path}: {e}; remove it to let the broker start above the "
                               "producer ids found in the logs") from None

    def ensure_above(self, producer_id: int) -> None:
        """Never hand out `producer_id` or anything below it (ids seen in the logs at startup)."""
        if producer_id > self._granted_end:
            self._granted_end = producer_id
            self._block_end = -1  # the current block (if any) lies below: take a new one

    def _new_block(self) -> None:
        if self.block_source is not None:
            self._next, self._block_end = self.block_source()
            log.info("Acquired new producerId block [%d, %d] from the controller", self._next, self._block_end)
            return
        start = self._granted_end + 1
        end = start + self.block_size - 1
        if end > MAX_PRODUCER_ID:
            raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR,
                             "Exhausted all producerIds as the next block's end producerId has exceeded the int64 limit")
        atomic_write(self.path, json.dumps({"version": 1, "broker": self.broker_id, "block_start": str(start),
                                            "block_end": str(end)}, separators=(",", ":")).encode())
        self._granted_end = end
        self._next, self._block_end = start, end
        log.info("Acquired new producerId block [%d, %d] (the latest block is recorded in %s)", start, end,
                 self.path)

    def generate_producer_id(self) -> int:
        if self._next > self._block_end:
            self._new_block()
        pid = self._next
        self._next += 1
        return pid

"""Producer ids never repeat: the persisted block (latest_producer_id_block), the logs as a floor,
and InitProducerId across a clean restart and a kill -9."""

from __future__ import annotations

import json

import pytest

from minibroker.coordinator.txn.producer_id_manager import BLOCK_FILE, ProducerIdManager
from minibroker_protocol.apis import init_producer_id
from tests.integration.helpers import RawClient


def test_blocks_are_recorded_before_use_and_resume_above_the_last_one(tmp_path):
    m = ProducerIdManager(tmp_path, broker_id=1, block_size=3)
    assert [m.generate_producer_id() for _ in range(4)] == [0, 1, 2, 3]
    assert json.loads((tmp_path / BLOCK_FILE).read_text()) == {
        "version": 1, "broker": 1, "block_start": "3", "block_end": "5"}
    # a crash now loses ids 4 and 5 of the block, never reuses 3
    again = ProducerIdManager(tmp_path, broker_id=1, block_size=3)
    assert again.generate_producer_id() == 6
    again.ensure_above(100)  # an id found in the logs
    assert again.generate_producer_id() == 101


def test_a_corrupt_block_file_stops_the_broker(tmp_path):
    (tmp_path / BLOCK_FILE).write_text("{not json")
    with pytest.raises(RuntimeError):
        ProducerIdManager(tmp_path, broker_id=1)


def _init(bootstrap: str) -> int:
    with RawClient(bootstrap) as c:
        r = c.call(init_producer_id.API, 4, init_producer_id.REQUEST(transactional_id=None,
                                                                    transaction_timeout_ms=60000))
        assert r.error_code == 0 and r.producer_epoch == 0
        return r.producer_id


def test_init_producer_id_never_repeats_across_restarts(kafka_broker_process):
    p = kafka_broker_process()
    p.start()
    first = [_init(p.bootstrap) for _ in range(3)]
    p.stop()
    p.start()
    second = [_init(p.bootstrap) for _ in range(3)]
    p.kill()
    p.start()
    third = [_init(p.bootstrap) for _ in range(3)]
    p.stop()
    ids = first + second + third
    assert len(set(ids)) == len(ids) and ids == sorted(ids)

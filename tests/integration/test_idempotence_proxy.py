"""The dropping proxy (dropping_proxy.py) on its own: it forwards a raw Produce, then cuts the
connection instead of forwarding the chosen request's response, after the broker wrote it."""

from __future__ import annotations

from typing import Any

from tests.integration.dropping_proxy import DroppingProxy


def test_proxy_forwards_and_drops_the_chosen_produce_response(tmp_path):
    from minibroker.testing import BrokerThread
    from minibroker_protocol.apis import produce
    from minibroker_protocol.records.v2 import Record, build_batch
    from tests.helpers import TEST_OVERRIDES
    from tests.integration.helpers import RawClient, create_topic, stored_records

    proxy = DroppingProxy(lambda n: n == 2)
    with proxy, BrokerThread(tmp_path / "data", overrides={**TEST_OVERRIDES, **proxy.advertised_listener}) as b:
        proxy.start(b.bootstrap)
        create_topic(b, "p")
        R = produce.REQUEST

        def request(value: bytes) -> Any:
            data = build_batch([Record(value=value)], base_timestamp=0)
            return R(transactional_id=None, acks=1, timeout_ms=5000, topic_data=[
                R.TopicProduceData(name="p", partition_data=[R.PartitionProduceData(index=0, records=data)])])

        with RawClient(proxy.bootstrap) as c:
            first = c.call(produce.API, 9, request(b"one"))
            assert first.responses[0].partition_responses[0].base_offset == 0
            c.send(produce.API, 9, request(b"two"))
            assert c.closed_by_peer()  # cut instead of the response
        assert proxy.dropped == 1
        assert [r.value for r in stored_records(b, "p")] == [b"one", b"two"]  # yet it was written

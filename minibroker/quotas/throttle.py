"""What each request costs against the client quotas, and the throttled response (Kafka:
KafkaApis' use of the produce, fetch and request quota managers, KIP-219).

- Produce: the request's size counts against producer_byte_rate (Kafka: request.sizeInBytes);
- Fetch from a consumer: the response's size counts against consumer_byte_rate; a throttled fetch
  is answered with no partitions and its size taken back, as Kafka's throttled fetch response
  (the fetch handler caps max_bytes at the quota's window, `max_value_in_window`);
- every request: the time spent on it counts against request_percentage (percent of one thread).
The largest throttle time goes in the response's throttle_time_ms, and the connection is muted
for it (the dispatcher does that).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.quotas.manager import ANONYMOUS, ClientQuotaManager
from minibroker.quotas.store import CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE

if TYPE_CHECKING:
    from minibroker_protocol.codec import Chunk
    from minibroker_protocol.schema import Message

PRODUCE, FETCH = 0, 1
_BYTES_LIKE = (bytes, bytearray, memoryview)


def response_size(chunks: list[Chunk] | None) -> int:
    return sum(len(c) if isinstance(c, _BYTES_LIKE) else c.size for c in chunks or ())


def request_throttle_ms(quotas: ClientQuotaManager, api_key: int, client_id: str, request_bytes: int,
                        response: Message | None, chunks: list[Chunk] | None, handler_seconds: float,
                        user: str = ANONYMOUS) -> int:
    """Record this request; the throttle time (0: none). Empties a throttled fetch's records."""
    throttle = quotas.record(REQUEST_PERCENTAGE, user, client_id, handler_seconds * 100)
    if api_key == PRODUCE:
        throttle = max(throttle, quotas.record(PRODUCER_BYTE_RATE, user, client_id, request_bytes))
    elif api_key == FETCH and response is not None and hasattr(response, "responses"):  # never null there
        # a single-node broker has no followers: every fetch is a consumer's
        size = response_size(chunks)
        fetch_throttle = quotas.record(CONSUMER_BYTE_RATE, user, client_id, size)
        throttle = max(throttle, fetch_throttle)
        if throttle:
            # Kafka answers a throttled fetch with no partitions at all (FetchContext's
            # getThrottledResponse) and takes its size back from the consumer's sensor
            quotas.unrecord(CONSUMER_BYTE_RATE, user, client_id, size)
            response.responses = []
    return throttle


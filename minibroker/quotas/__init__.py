"""Client quotas (KIP-13, KIP-55, KIP-124, KIP-219, KIP-546, KIP-612): what a client may use per
second, measured as Kafka measures it, and the throttle time that answers an excess.

- `rate`: Kafka's sampled rate (quota.window.num samples of quota.window.size.seconds).
- `store`: the quota entities and values AlterClientQuotas sets, persisted in the data directory.
- `manager`: per-client sensors for producer_byte_rate, consumer_byte_rate, request_percentage and
  the per-IP connection_creation_rate; each records and returns a throttle time.
"""

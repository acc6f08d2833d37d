"""Replica placement for new partitions (Kafka: ReplicaPlacer; rack-unaware striping).

Kafka places a new topic's replicas by striping over the usable brokers (registered, unfenced,
not shutting down): partition p's first replica is broker (start + p) mod n, the others follow it
at a shift that grows each time the partitions wrap around the broker list, so leaders and
followers spread evenly (the rack-unaware path of Kafka's StripedReplicaPlacer, the algorithm
AdminUtils.assignReplicasToBrokersRackUnaware introduced). `start` and `shift` are random in Kafka;
here they can be given (tests) and are random otherwise. Racks are not taken into account.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from minibroker_protocol.errors import ErrorCode, KafkaError


def place(brokers: Sequence[int], partitions: int, replication_factor: int, *, start_partition: int = 0,
          start_index: int | None = None, shift: int | None = None,
          rng: random.Random | None = None) -> list[list[int]]:
    """The replica list of each of `partitions` new partitions, numbered from `start_partition`."""
    usable = sorted(brokers)
    n = len(usable)
    if replication_factor <= 0:
        raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
    if n == 0:
        raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, "There are no usable brokers to place replicas on.")
    if replication_factor > n:
        raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                         f"Unable to replicate the partition {replication_factor} time(s): The target replication "
                         f"factor of {replication_factor} cannot be reached because only {n} broker(s) are "
                         "registered.")
    r = rng or random.Random()
    first_index = r.randrange(n) if start_index is None else start_index
    next_shift = r.randrange(n) if shift is None else shift
    out: list[list[int]] = []
    current = max(0, start_partition)
    for _ in range(partitions):
        if current > 0 and current % n == 0:
            next_shift += 1
        first = (current + first_index) % n
        replicas = [usable[first]]
        for j in range(replication_factor - 1):
            replicas.append(usable[(first + 1 + (next_shift + j) % (n - 1)) % n])
        out.append(replicas)
        current += 1
    return out

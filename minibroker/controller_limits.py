"""How much one CreateTopics or CreatePartitions may create (issue 30, finding 6).

Kafka's bounds, which a client meets the same way here (Kafka 4.4, measured against the reference
broker; tests/reference/test_bounds_reference.py):

- ReplicationControlManager.validateTotalNumberOfPartitions: more than `MAX_PARTITIONS_PER_BATCH`
  (10,000) partitions in one CreateTopics (a topic without a count counts num.partitions; one
  with assignments, their number), or more than 10,000 *additional* partitions in one
  CreatePartitions, refuses every topic of the request that reached the controller (duplicates
  and unauthorized ones keep their own error) with POLICY_VIOLATION.
- QuorumController's `MAX_RECORDS_PER_USER_OP` (10,000, a BoundedList): the records a
  CreateTopics would write — a TopicRecord, a PartitionRecord per partition and a ConfigRecord per
  config of each valid topic — above 10,000 refuse the request alike ("Unable to perform
  excessively large batch operation."): so one topic of 9,999 partitions passes, 10,000 do not.

And one bound of our own, since a single node holds every partition: each partition keeps a
descriptor open (its active segment) and takes some disk, so a creation that the process's
RLIMIT_NOFILE or the log directory's free space cannot take is refused before anything is made,
with POLICY_VIOLATION and a message saying which: the broker keeps `fd_reserve` descriptors for
connections, segment rolls and its own files, and a start must reopen every partition, so a
broker filled to its descriptor limit would not start again. Kafka has no such check (it leaves it
to the operator's ulimit); a creation that fails half way anyway (another process took the space)
is undone (Topics.create_async), never left for the next start to trip on.
"""

from __future__ import annotations

import errno
import logging
import os
import resource
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from minibroker_protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from minibroker.services import BrokerServices

log = logging.getLogger("minibroker.topics")

MAX_PARTITIONS_PER_BATCH = 10_000  # ReplicationControlManager.MAX_PARTITIONS_PER_BATCH
MAX_RECORDS_PER_USER_OP = 10_000  # QuorumController.MAX_RECORDS_PER_USER_OP
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
TOO_MANY_ADDITIONAL_PARTITIONS = "Excessively large number of additional partitions per request."
TOO_MANY_RECORDS = "Unable to perform excessively large batch operation."

DESCRIPTORS_PER_PARTITION = 1  # the active segment's .log file (indexes are mapped, then closed)
# what a new partition's directory takes on disk (partition.metadata, leader-epoch-checkpoint, the
# directory, the sparse index files' first blocks), with room to spare: about 12 KiB measured
DISK_PER_PARTITION = 64 * 1024
# left free for the first records: small, so that a dev broker on a small disk (or a test's tmpfs)
# still creates topics; running out later is the append's KAFKA_STORAGE_ERROR, as in Kafka
DISK_RESERVE = 1024 * 1024


def requested_partitions(counts: Iterable[int], default_partitions: int) -> int:
    """validateTotalNumberOfPartitions' sum: -1 stands for num.partitions, other non-positive
    counts add nothing (the topic is refused on its own)."""
    return sum(default_partitions if n == -1 else max(n, 0) for n in counts)


def partitions_refusal(total: int, *, additional: bool = False) -> KafkaError | None:
    if total > MAX_PARTITIONS_PER_BATCH:
        return KafkaError(ErrorCode.POLICY_VIOLATION,
                          TOO_MANY_ADDITIONAL_PARTITIONS if additional else TOO_MANY_PARTITIONS)
    return None


def records_refusal(topics: Iterable[tuple[int, int]]) -> KafkaError | None:
    """(partitions, configs) of each valid topic: the records CreateTopics would write."""
    if sum(1 + partitions + configs for partitions, configs in topics) > MAX_RECORDS_PER_USER_OP:
        return KafkaError(ErrorCode.POLICY_VIOLATION, TOO_MANY_RECORDS)
    return None


def open_descriptors(limit: int) -> int | None:
    """Descriptors the process has open (Linux: /proc/self/fd), None where that cannot be read;
    `limit` when not even listing them finds a descriptor free."""
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # less the one listdir holds
    except OSError as e:
        return limit if e.errno in (errno.EMFILE, errno.ENFILE) else None


def fd_reserve(limit: int) -> int:
    """Descriptors kept for connections, segment rolls and the broker's own files."""
    return max(128, limit // 10)


def headroom_refusal(data_dir: Path, partitions: int) -> KafkaError | None:
    """POLICY_VIOLATION when the process's descriptors or the log directory's disk cannot take
    `partitions` new partitions; checked before anything is created."""
    if partitions <= 0:
        return None
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    used = open_descriptors(limit)
    if limit != resource.RLIM_INFINITY and used is not None:
        reserve = fd_reserve(limit)
        left = limit - used - reserve
        if partitions * DESCRIPTORS_PER_PARTITION > left:
            return KafkaError(
                ErrorCode.POLICY_VIOLATION,
                f"Unable to create {partitions} partition(s): each keeps a file descriptor open and the broker "
                f"has {max(limit - used, 0)} of its {limit} (RLIMIT_NOFILE) left, of which it keeps {reserve} "
                "for connections and segments. Raise the broker's open files limit (ulimit -n).")
    try:
        st = os.statvfs(data_dir)
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    needed = partitions * DISK_PER_PARTITION + DISK_RESERVE
    if free < needed:
        return KafkaError(
            ErrorCode.POLICY_VIOLATION,
            f"Unable to create {partitions} partition(s): the log directory {data_dir} has {free} bytes free, "
            f"{needed} are needed ({DISK_PER_PARTITION} per partition and {DISK_RESERVE} kept for records).")
    return None


def auto_create_refused(services: BrokerServices, names: Iterable[str | None]) -> bool:
    """Metadata's auto-creation of the missing topics among `names`: Kafka sends them to its
    controller as one CreateTopics (DefaultAutoTopicCreationManager), so the same bounds refuse
    them all (each topic then answers UNKNOWN_TOPIC_OR_PARTITION); here the headroom too."""
    if not services.config.get("auto.create.topics.enable"):
        return False
    missing = {n for n in names if n is not None and services.metadata_cache.topic(n) is None}
    if not missing:
        return False
    partitions = len(missing) * services.config.get_int("num.partitions")
    refusal = (partitions_refusal(partitions) or records_refusal((partitions // len(missing), 0) for _ in missing)
               or headroom_refusal(services.config.data_dir, partitions))
    if refusal is not None:
        log.warning("Auto topic creation of %d topic(s) failed with error 'POLICY_VIOLATION': %s",
                    len(missing), refusal.message)
    return refusal is not None

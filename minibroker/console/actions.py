"""The console's write actions (`--console-allow-writes`): create and delete a topic, produce a test
record, reset a group's committed offsets.

Each goes through the code path the protocol API it imitates uses, with that API's checks, so the
console can do nothing a Kafka client could not:

- create: `TopicRegistry.check_new_topic` (name, collisions, partitions, replication factor,
  config) then `create_async`, as CreateTopics with validate_only false;
- delete: DeleteTopics' refusals (an internal topic, delete.topic.enable=false) then
  `TopicRegistry.delete`, which tells the group coordinator and waiting fetches;
- produce: a RecordBatch v2 built as a non-idempotent producer builds it, handed to
  `ReplicaManager.append_records` as a Produce partition is (validated once with a request
  version: format conversion for an old format topic, max.message.bytes, compacted topics need a
  key; then appended, flush policy, metrics, waiting fetches woken);
- reset offsets: an OffsetCommit request with no generation and no member, as
  kafka-consumer-groups.sh --reset-offsets sends through the Admin client, handed to the group
  coordinator's `commit_offsets`, which refuses it for a group with members (UNKNOWN_MEMBER_ID)
  as it does for that tool; the console says first, as the tool does, that the group must be
  inactive. Offsets must lie within [log start offset, high watermark].

Errors are `ActionError`s carrying an HTTP status and Kafka's error name and message.
"""

from __future__ import annotations

from dataclasses import dataclass

from minibroker.console.state import parse_int
from minibroker.services import BrokerServices
from minibroker.tools.json_value import JsonValue
from minibroker_protocol.apis import offset_commit
from minibroker_protocol.errors import ErrorCode, KafkaError, error_name
from minibroker_protocol.records.v2 import Record, build_batch

# Any Produce version from 3 checks a single uncompressed v2 batch the same way; the highest we
# serve is named so the log applies every check a current client's request gets.
PRODUCE_REQUEST_VERSION = 13
OFFSET_COMMIT_VERSION = 9  # the last version naming topics by name; an admin commit needs no epoch
MAX_TEST_RECORD_BYTES = 1024 * 1024

_STATUS: dict[int, int] = {ErrorCode.TOPIC_ALREADY_EXISTS: 409, ErrorCode.NON_EMPTY_GROUP: 409,
           ErrorCode.UNKNOWN_MEMBER_ID: 409, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: 404,
           ErrorCode.GROUP_ID_NOT_FOUND: 404, ErrorCode.TOPIC_DELETION_DISABLED: 403}


class ActionError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _from_kafka(e: KafkaError) -> ActionError:
    name = error_name(e.code)
    return ActionError(_STATUS.get(e.code, 400), f"{name}: {e.message}" if e.message else name)


@dataclass
class Done:
    """What an action did: a sentence for the page, where to look next, and the details as JSON."""

    message: str
    link: str
    details: dict[str, JsonValue]


def _configs(text: str) -> dict[str, str]:
    """`key=value` pairs, one per line or separated by commas."""
    out: dict[str, str] = {}
    for part in text.replace(",", "\n").splitlines():
        part = part.strip()
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ActionError(400, f"config {part[:80]!r} is not key=value")
        out[key.strip()] = value.strip()
    return out


async def create_topic(services: BrokerServices, name: str, partitions: str | None, configs: str) -> Done:
    n = parse_int(partitions, "partitions", lo=1, hi=10_000) if partitions else services.config.get("num.partitions")
    replication = services.config.get("default.replication.factor")
    try:
        overrides = services.topics.check_new_topic(name, n, replication, _configs(configs))
        topic = await services.topics.create_async(name, n, overrides)
    except KafkaError as e:
        raise _from_kafka(e) from None
    return Done(f"Created topic {name} with {n} partition(s)", f"/topics/{name}",
                {"topic": name, "topic_id": str(topic.topic_id), "partitions": n,
                 "overrides": {k: str(v) for k, v in overrides.items()}})


def delete_topic(services: BrokerServices, name: str) -> Done:
    topic = services.metadata_cache.topic(name)
    if topic is None:
        raise ActionError(404, f"UNKNOWN_TOPIC_OR_PARTITION: no topic {name!r}")
    if topic.is_internal:  # DeleteTopics: TOPIC_DELETION_DISABLED for internal topics
        raise ActionError(403, f"TOPIC_DELETION_DISABLED: Cannot delete internal topic {name}")
    if not services.config.get("delete.topic.enable"):
        raise ActionError(403, "TOPIC_DELETION_DISABLED: delete.topic.enable is false")
    services.topics.delete(name)
    return Done(f"Deleted topic {name}", "/topics", {"topic": name, "topic_id": str(topic.topic_id)})


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8")


async def produce(services: BrokerServices, name: str, partition: str, key: str | None, value: str | None,
                  headers: str = "") -> Done:
    topic = services.metadata_cache.topic(name)
    if topic is None:
        raise ActionError(404, f"UNKNOWN_TOPIC_OR_PARTITION: no topic {name!r}")
    p = parse_int(partition, "partition", lo=0, hi=(1 << 31) - 1)
    if p not in topic.partitions:
        raise ActionError(404, f"UNKNOWN_TOPIC_OR_PARTITION: topic {name!r} has no partition {p}")
    if topic.is_internal:  # Produce: clients cannot append to internal topics
        raise ActionError(400, f"INVALID_TOPIC_EXCEPTION: Cannot append to internal topic {name}")
    key_b, value_b = _bytes(key), _bytes(value)
    if len(key_b or b"") + len(value_b or b"") > MAX_TEST_RECORD_BYTES:
        raise ActionError(400, f"a test record is at most {MAX_TEST_RECORD_BYTES} bytes")
    hdrs = [(k, _bytes(v)) for k, v in _configs(headers).items()]
    batch = build_batch([Record(key=key_b, value=value_b, headers=hdrs)], base_timestamp=services.clock())
    # as a Produce's partition: validation once, append, flush policy, fetches woken
    (result,) = await services.replica_manager.append_records(
        [((name, p), batch)], required_acks=1, request_version=PRODUCE_REQUEST_VERSION)
    if result.error is not None:  # InvalidBatch, RecordValidationError: KafkaErrors with Produce's codes
        raise _from_kafka(result.error)
    info = result.info
    assert info is not None
    return Done(f"Produced a record to {name}-{p} at offset {info.first_offset}",
                f"/topics/{name}/{p}/messages?offset={info.first_offset}",
                {"topic": name, "partition": p, "offset": info.first_offset,
                 "log_append_time": info.log_append_time})


def reset_offsets(services: BrokerServices, group_id: str, name: str, partition: str | None, to: str) -> Done:
    """Commit `to` ("earliest", "latest" or an offset) for one partition, or every partition of
    the topic when `partition` is empty."""
    gc = services.group_coordinator
    if not group_id:
        raise ActionError(400, "INVALID_GROUP_ID: the group id is empty")
    topic = services.metadata_cache.topic(name)
    if topic is None:
        raise ActionError(404, f"UNKNOWN_TOPIC_OR_PARTITION: no topic {name!r}")
    parts = sorted(topic.partitions) if not partition else [parse_int(partition, "partition", lo=0,
                                                                        hi=(1 << 31) - 1)]
    # kafka-consumer-groups.sh refuses before committing: "Assignments can only be reset if the
    # group '<id>' is inactive"; the coordinator would answer UNKNOWN_MEMBER_ID anyway.
    classic = gc.groups.get(group_id)
    consumer = gc.consumer_groups.groups.get(group_id)
    if (classic is not None and classic.members) or (consumer is not None and consumer.members):
        raise ActionError(409, f"Assignments can only be reset if the group '{group_id}' is inactive, "
                               "but it has members")
    R = offset_commit.REQUEST
    committed = []
    for p in parts:
        lg = services.replica_manager.get_partition(name, p)
        if lg is None:
            raise ActionError(404, f"UNKNOWN_TOPIC_OR_PARTITION: topic {name!r} has no partition {p}")
        if to == "earliest":
            offset = lg.log_start_offset
        elif to == "latest":
            offset = lg.high_watermark
        else:
            offset = parse_int(to, "offset", lo=0)
            if not lg.log_start_offset <= offset <= lg.high_watermark:
                raise ActionError(400, f"offset {offset} is outside {name}-{p}'s "
                                       f"[{lg.log_start_offset}, {lg.high_watermark}]")
        committed.append(R.OffsetCommitRequestPartition(partition_index=p, committed_offset=offset,
                                                        committed_metadata=""))
    req = R(group_id=group_id, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
            topics=[R.OffsetCommitRequestTopic(name=name, partitions=committed)])
    errors = gc.commit_offsets(req, OFFSET_COMMIT_VERSION)
    failed = {tp: code for tp, code in errors.items() if code != ErrorCode.NONE}
    if failed:
        (t, p), code = next(iter(failed.items()))
        raise _from_kafka(KafkaError(code, f"committing {t}-{p} failed"))
    return Done(f"Reset {group_id}'s offsets of {name} to {to}", f"/groups/{group_id}",
                {"group": group_id, "topic": name,
                 "offsets": {str(x.partition_index): x.committed_offset for x in committed}})

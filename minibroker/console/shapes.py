"""The shapes of what the console shows: one TypedDict per dict minibroker.console.state returns.

The state builders fill them from the broker's components, the JSON endpoints serve them as they
are (so these are also the /api/... response formats), and minibroker.console.pages renders them.
Field names are the JSON keys; they follow Kafka's names (high_watermark, last_stable_offset,
member_epoch...) so a reader can match them with kafka-*.sh output and the protocol's fields.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict, final

from minibroker.tools.json_value import JsonValue

# a topic config value as shown: list values (cleanup.policy) joined with commas
ConfigValue = str | int | float | bool | None


# -- cluster ---------------------------------------------------------------------------------------
class ServedApi(TypedDict):
    name: str
    key: int
    min: int
    max: int


class BrokerConfigRow(TypedDict):
    name: str
    value: str | None  # None for a sensitive value, as DescribeConfigs hides it
    source: str
    read_only: bool


class ClusterView(TypedDict):
    cluster_id: str
    node_id: int
    listener: str
    advertised: str
    uptime_ms: int
    started_ms: int
    data_dir: str
    data_dir_bytes: int
    topics: int
    partitions: int
    apis: list[ServedApi]
    config: list[BrokerConfigRow]


# -- topics, partitions, segments ------------------------------------------------------------------
class TopicRow(TypedDict):
    name: str
    topic_id: str
    internal: bool
    partitions: int
    size: int
    messages: int
    cleanup_policy: str
    overrides: dict[str, str]


class PartitionSummary(TypedDict):
    partition: int
    log_start_offset: int
    high_watermark: int
    log_end_offset: int
    last_stable_offset: int
    recovery_point: int
    size: int
    segments: int


class TopicView(TypedDict):
    name: str
    topic_id: str
    internal: bool
    config: dict[str, ConfigValue]
    overrides: dict[str, ConfigValue]
    partitions: list[PartitionSummary]


class PartitionProducer(TypedDict):
    """A producer's state in one partition's log (Kafka's ProducerStateEntry)."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    open_txn_first_offset: int | None


class SegmentSummary(TypedDict):
    base_offset: int
    size: int
    file: str
    first_batch_max_timestamp: int
    max_timestamp: int
    index_entries: int
    time_index_entries: int


class PartitionView(PartitionSummary):
    topic: str
    index_interval_bytes: int
    segment_bytes: int
    first_unstable_offset: int | None
    producers: list[PartitionProducer]
    segment_list: list[SegmentSummary]


class OffsetIndexEntry(TypedDict):
    offset: int
    position: int


class TimeIndexEntry(TypedDict):
    timestamp: int
    offset: int


class SegmentBatch(TypedDict):
    position: int
    base_offset: int
    last_offset: int
    size: int
    max_timestamp: int


class SegmentView(SegmentSummary):
    topic: str
    partition: int
    index_interval_bytes: int
    index: list[OffsetIndexEntry]
    time_index: list[TimeIndexEntry]
    batches: list[SegmentBatch]


# -- messages --------------------------------------------------------------------------------------
class ShownBytes(TypedDict):
    """A key or value: its hex, its text when it is UTF-8, and its JSON when the text parses."""

    size: int
    hex: str
    truncated: bool
    text: str | None
    json: NotRequired[JsonValue]
    schema: NotRequired[SchemaDecoded]  # framed with a schema id the registry holds (console.schema_pages)


class SchemaDecoded(TypedDict):
    """A key or value in Confluent's wire format (magic 0, schema id), decoded by its schema."""

    schema_id: int
    schema_type: str | None  # None: the registry does not hold the id
    subject: str | None  # the version that decoded it: the topic's subject when that holds the id
    version: int | None
    message_type: str | None  # Protobuf: the message the indexes name
    json: JsonValue
    error: str | None


class ShownHeader(TypedDict):
    key: str
    value: ShownBytes | None


class ControlRecord(TypedDict):
    type: str  # ABORT or COMMIT (Kafka's ControlRecordType)
    coordinator_epoch: int | None  # set for transaction markers only (ControlRecord)


class RecordView(TypedDict):
    offset: int
    offset_delta: int
    timestamp: int
    timestamp_delta: int | None  # None before magic 2
    key: ShownBytes | None
    value: ShownBytes | None
    headers: list[ShownHeader]
    control: NotRequired[ControlRecord]


@final  # final: pages tell it from an OversizedBatch by its keys
class MessageBatch(TypedDict):
    position: int
    segment: int
    base_offset: int
    last_offset: int
    batch_length: int
    size: int
    partition_leader_epoch: int
    magic: int
    crc: int
    crc_valid: bool
    attributes: int
    codec: str
    timestamp_type: str
    transactional: bool
    control: bool
    aborted: bool
    above_high_watermark: bool
    above_last_stable_offset: bool
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int | None  # as BatchSummary.count
    error: str | None
    records: list[RecordView]
    records_truncated: NotRequired[bool]  # the page's budget left records out (console.record_page)


@final
class OversizedBatch(TypedDict):
    """A batch too large to read for the page: where it is and why it is not shown."""

    position: int
    base_offset: int
    size: int
    error: str


class MessagesView(TypedDict):
    topic: str
    partition: int
    start: int
    log_start_offset: int
    high_watermark: int
    last_stable_offset: int
    log_end_offset: int
    batches: list[MessageBatch | OversizedBatch]


class ByteSpan(TypedDict):
    start: int
    end: int
    label: str


class BatchBytesView(TypedDict):
    topic: str
    partition: int
    segment: int
    position: int
    base_offset: int
    magic: int
    size: int
    codec: str
    hex: str
    spans: list[ByteSpan]


# -- groups ----------------------------------------------------------------------------------------
GroupType = Literal["classic", "consumer", "share"]


class GroupRow(TypedDict):
    group_id: str
    type: GroupType
    state: str
    protocol_type: str
    members: int
    epoch: int | None  # the generation of a classic group, else the group epoch
    lag: int  # summed over the committed partitions
    uncommitted: int  # assigned partitions without a commit (their lag is unknown: `-` in Kafka's tool)


class CommittedOffset(TypedDict):
    topic: str
    partition: int
    committed: int | None  # None: assigned, never committed
    metadata: str | None
    commit_timestamp: int | None
    log_end_offset: int | None
    lag: int | None


class TimelineEvent(TypedDict):
    at_ms: int
    event: str
    detail: str
    generation: int


class TopicPartitions(TypedDict):
    topic: str
    partitions: list[int]


class ClassicMember(TypedDict):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: list[TopicPartitions] | None  # None when the assignment bytes do not parse


class ClassicGroupView(TypedDict):
    group_id: str
    type: Literal["classic"]
    state: str
    protocol_type: str | None
    protocol: str | None
    generation: int | None
    leader: str | None
    state_since: int | None
    previous_state: str | None
    members: list[ClassicMember]
    offsets: list[CommittedOffset]
    timeline: list[TimelineEvent]


class ConsumerMember(TypedDict):
    """A KIP-848 member: its current assignment beside its target (they differ while it reconciles)."""

    member_id: str
    group_instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    member_epoch: int
    previous_member_epoch: int
    state: str
    subscribed_topics: list[str]
    subscribed_regex: str | None
    server_assignor: str | None
    assignment: list[TopicPartitions]
    pending_revocation: list[TopicPartitions]
    target: list[TopicPartitions]
    converged: bool


class ConsumerGroupView(TypedDict):
    group_id: str
    type: Literal["consumer"]
    state: str
    protocol_type: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: list[ConsumerMember]
    offsets: list[CommittedOffset]
    timeline: list[TimelineEvent]


class InFlightRecord(TypedDict):
    offset: int
    state: str
    delivery_count: int
    member_id: str | None
    lock_expires_ms: int | None


class SharePartitionView(TypedDict):
    """A KIP-932 share partition's window of in-flight records, and the offsets and lag
    DescribeShareGroupOffsets reports."""

    topic: str
    topic_id: str
    partition: int
    start_offset: int
    end_offset: int
    state_epoch: int
    high_watermark: int | None
    lag: int  # -1 when the partition is gone
    in_flight: dict[str, int]  # record count by state (AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED)
    delivery_counts: dict[str, int]
    next_lock_expiry_ms: int | None
    next_lock_expiry_in_ms: int | None
    records: list[InFlightRecord]
    records_shown: int
    records_total: int


class ShareMember(TypedDict):
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed_topics: list[str]
    assignment: list[TopicPartitions]


class ShareGroupView(TypedDict):
    group_id: str
    type: Literal["share"]
    state: str
    protocol_type: str
    group_epoch: int
    assignment_epoch: int
    members: list[ShareMember]
    share_partitions: list[SharePartitionView]
    configs: dict[str, str]


GroupView = ClassicGroupView | ConsumerGroupView | ShareGroupView


# -- transactions and producers --------------------------------------------------------------------
class TransactionRow(TypedDict):
    transactional_id: str
    producer_id: int
    epoch: int
    state: str
    timeout_ms: int
    partitions: list[str]
    started: int
    open_ms: int | None


class HeldPartition(TypedDict):
    """A partition whose last stable offset holds read_committed consumers below the high watermark."""

    topic: str
    partition: int
    last_stable_offset: int
    high_watermark: int
    held_back: int


class ProducerRow(TypedDict):
    topic: str
    partition: int
    producer_id: int
    epoch: int
    last_sequence: int
    open_txn_first_offset: int | None


class TransactionsView(TypedDict):
    transactions: list[TransactionRow]
    lso_held: list[HeldPartition]
    producers: list[ProducerRow]
    now: int


# -- replication (issue 29) -------------------------------------------------------------------------
class ReplicationBroker(TypedDict):
    node_id: int
    host: str
    port: int
    broker_epoch: int
    fenced: bool
    in_controlled_shutdown: bool
    this_broker: bool


class FollowerRow(TypedDict):
    """What the leader knows of one follower (Kafka: kafka.cluster.Replica's ReplicaState)."""

    node_id: int
    log_end_offset: int  # -1 until its first fetch in this leader epoch
    lag: int | None  # the leader's LEO minus the follower's, None while unknown
    in_isr: bool
    last_caught_up_ms_ago: int | None  # None: never caught up in this leader epoch
    last_fetch_ms_ago: int | None


class PartitionReplication(TypedDict):
    topic: str
    partition: int
    role: Literal["leader", "follower"]
    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: list[int]
    isr: list[int]
    pending_isr: list[int] | None  # an AlterPartition in flight (Kafka: PendingExpandIsr/PendingShrinkIsr)
    under_min_isr: bool
    min_insync_replicas: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    followers: list[FollowerRow]  # the leader's view; empty on a follower


class ReplicationView(TypedDict):
    node_id: int
    now_ms: int
    brokers: list[ReplicationBroker]
    partitions: list[PartitionReplication]

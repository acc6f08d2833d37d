"""ListOffsets: v0-11.

Behavior: per partition, the offset for a timestamp:
  -1 LATEST: the high watermark (read_uncommitted) or the last stable offset (read_committed);
  -2 EARLIEST and -4 EARLIEST_LOCAL (KIP-1005): the log start offset;
  -3 MAX_TIMESTAMP (KIP-734): the offset and timestamp of the record with the largest timestamp;
  -5 LATEST_TIERED (KIP-1005) and -6 EARLIEST_PENDING_UPLOAD (KIP-1023): both ask about remote
     storage; there is none here, so timestamp -1, offset -1, leader epoch -1, as Kafka's
     UnifiedLog answers for a log without remote storage;
  t >= 0: the first offset whose timestamp is >= t, found through the .timeindex; none → -1.

v0 (the seeds' form, removed in Kafka 4.0 by KIP-896, kept here for old clients, issue 7): up to
`max_num_offsets` offsets, newest first, from the segments' start offsets and the log end
offset, chosen by -1 (latest), -2 (earliest) or a time compared with the segment files'
modification times, not with record timestamps (Kafka: UnifiedLog.legacyFetchOffsetsBefore);
a consumer (replica id -1) never sees an offset above the high watermark. Other negative
timestamps get UNSUPPORTED_VERSION.

Version notes: v0 max_num_offsets and a list of offsets; v1 single offset + timestamp; v2 isolation level; v4 leader epochs; v6 flexible; v7 MAX_TIMESTAMP; v8 EARLIEST_LOCAL;
v9 LATEST_TIERED; v10 timeout; v11 EARLIEST_PENDING_UPLOAD (no layout change).
"""

from __future__ import annotations

from minibroker.handlers import authz
from minibroker.handlers.registry import RequestContext, handles
from minibroker.partition import Partition
from minibroker_protocol.apis import list_offsets
from minibroker_protocol.errors import ErrorCode, KafkaError

R = list_offsets.RESPONSE
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6
# the first version each special timestamp may be asked at (checked against Kafka 4.4 in tests/reference)
_SINCE_VERSION = {MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9, EARLIEST_PENDING_UPLOAD: 11}
CONSUMER_REPLICA_ID = -1


@handles(list_offsets.API, "0-11")
async def handle_list_offsets(ctx: RequestContext, req: list_offsets.ListOffsetsRequest) -> list_offsets.ListOffsetsResponse:
    services = ctx.services
    topics = []
    for rt in req.topics:
        parts = []
        for rp in rt.partitions:
            pr = R.ListOffsetsPartitionResponse(partition_index=rp.partition_index, error_code=0,
                                                timestamp=-1, offset=-1, leader_epoch=-1)
            lg = services.replica_manager.get_partition(rt.name, rp.partition_index)
            if authz.topic_denied(ctx, rt.name, authz.Op.DESCRIBE):  # Kafka: DESCRIBE on the topic
                pr.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif lg is None:
                pr.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif lg.from_metadata and (err := _leadership_error(lg, rp.current_leader_epoch if ctx.version >= 4 else -1)):
                pr.error_code = err  # Kafka: fetchOffsetForTimestamp asks the leader, at its epoch
            elif ctx.version == 0:
                _answer_v0(lg, rp, pr, from_consumer=req.replica_id == CONSUMER_REPLICA_ID)
            elif _SINCE_VERSION.get(rp.timestamp, 0) > ctx.version:
                # Kafka refuses a special timestamp older than the version that brought it
                # (ListOffsetsRequest: MAX_TIMESTAMP needs v7, EARLIEST_LOCAL v8, ...)
                pr.error_code = ErrorCode.UNSUPPORTED_VERSION
            else:
                pr.leader_epoch = 0
                ts = rp.timestamp
                if ts == LATEST and req.replica_id >= 0:  # a follower (or a debugging tool): the LEO
                    pr.offset = lg.log_end_offset
                elif ts == LATEST:
                    pr.offset = lg.last_stable_offset if req.isolation_level == 1 else lg.high_watermark
                elif ts in (EARLIEST, EARLIEST_LOCAL):
                    pr.offset = lg.log_start_offset
                elif ts == MAX_TIMESTAMP:
                    found = lg.max_timestamp_and_offset()
                    if found is not None:
                        pr.timestamp, pr.offset = found
                elif ts in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
                    pr.leader_epoch = -1
                elif ts < 0:
                    pr.error_code = ErrorCode.INVALID_REQUEST
                else:
                    at = lg.offset_for_timestamp(ts)
                    if at is not None:
                        pr.offset, pr.timestamp = at
                    else:
                        pr.leader_epoch = -1  # Kafka: no record at or after it, no epoch either
            parts.append(pr)
        topics.append(R.ListOffsetsTopicResponse(name=rt.name, partitions=parts))
    return R(topics=topics)


def _leadership_error(part: Partition, current_leader_epoch: int) -> int:
    try:
        part.check_leader_epoch(current_leader_epoch, require_leader=True)
    except KafkaError as e:
        return e.code
    return 0


def _answer_v0(lg: Partition, rp: list_offsets.ListOffsetsRequest.ListOffsetsPartition,
               pr: list_offsets.ListOffsetsResponse.ListOffsetsPartitionResponse, *, from_consumer: bool) -> None:
    """ListOffsets v0 for one partition (Kafka: KafkaApis.handleListOffsetRequestV0 and
    Partition.legacyFetchOffsetsForTimestamp)."""
    pr.old_style_offsets = []
    if rp.timestamp < EARLIEST:
        pr.error_code = ErrorCode.UNSUPPORTED_VERSION
        return
    offsets = lg.legacy_fetch_offsets_before(rp.timestamp, rp.max_num_offsets)
    if from_consumer and any(o > lg.high_watermark for o in offsets):
        offsets = [lg.high_watermark] + [o for o in offsets if o <= lg.high_watermark]
    pr.old_style_offsets = offsets

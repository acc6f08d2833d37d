"""Coordinator records (__consumer_offsets, __transaction_state): schema data generated from
Kafka's definitions by tools/gen_schemas.py. Edit the generator, not this file."""

from protocol.schema import F, Schema

OFFSET_COMMIT_KEY = Schema(
    'OffsetCommitKey', '0-1', flexible='none',
    fields=[
        F('group', 'string', '0-1'),
        F('topic', 'string', '0-1'),
        F('partition', 'int32', '0-1'),
    ],
)

OFFSET_COMMIT_VALUE = Schema(
    'OffsetCommitValue', '0-4', flexible='4+',
    fields=[
        F('offset', 'int64', '0+'),
        F('leader_epoch', 'int32', '3+', default=-1, ignorable=True),
        F('metadata', 'string', '0+'),
        F('commit_timestamp', 'int64', '0+'),
        F('expire_timestamp', 'int64', '1', default=-1, ignorable=True),
    ],
)

GROUP_METADATA_KEY = Schema(
    'GroupMetadataKey', '2', flexible='none',
    fields=[
        F('group', 'string', '2'),
    ],
)

GROUP_METADATA_VALUE = Schema(
    'GroupMetadataValue', '0-4', flexible='4+',
    fields=[
        F('protocol_type', 'string', '0+'),
        F('generation', 'int32', '0+'),
        F('protocol', 'string', '0+', nullable='0+'),
        F('leader', 'string', '0+', nullable='0+'),
        F('current_state_timestamp', 'int64', '2+', default=-1, ignorable=True),
        F('members', '[]MemberMetadata', '0+', fields=[
            F('member_id', 'string', '0+'),
            F('group_instance_id', 'string', '3+', nullable='3+', default=None, ignorable=True),
            F('client_id', 'string', '0+'),
            F('client_host', 'string', '0+'),
            F('rebalance_timeout', 'int32', '1+', default=-1, ignorable=True),
            F('session_timeout', 'int32', '0+'),
            F('subscription', 'bytes', '0+'),
            F('assignment', 'bytes', '0+'),
        ]),
    ],
)

TRANSACTION_LOG_KEY = Schema(
    'TransactionLogKey', '0', flexible='none',
    fields=[
        F('transactional_id', 'string', '0'),
    ],
)

TRANSACTION_LOG_VALUE = Schema(
    'TransactionLogValue', '0-1', flexible='1+',
    fields=[
        F('producer_id', 'int64', '0+'),
        F('previous_producer_id', 'int64', '1+', tag=0, tagged='1+', default=-1),
        F('next_producer_id', 'int64', '1+', tag=1, tagged='1+', default=-1),
        F('producer_epoch', 'int16', '0+'),
        F('transaction_timeout_ms', 'int32', '0+'),
        F('transaction_status', 'int8', '0+'),
        F('transaction_partitions', '[]PartitionsSchema', '0+', nullable='0+', fields=[
            F('topic', 'string', '0+'),
            F('partition_ids', '[]int32', '0+'),
        ]),
        F('transaction_last_update_timestamp_ms', 'int64', '0+'),
        F('transaction_start_timestamp_ms', 'int64', '0+'),
        F('client_transaction_version', 'int16', '1+', tag=2, tagged='1+'),
    ],
)

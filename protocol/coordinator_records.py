"""Coordinator records (__consumer_offsets, __transaction_state): schema data generated from
Kafka's definitions by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import F, Schema, message_classes

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

CONSUMER_GROUP_METADATA_KEY = Schema(
    'ConsumerGroupMetadataKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
    ],
)

CONSUMER_GROUP_METADATA_VALUE = Schema(
    'ConsumerGroupMetadataValue', '0', flexible='0+',
    fields=[
        F('epoch', 'int32', '0+'),
        F('metadata_hash', 'int64', '0+', tag=0, tagged='0+'),
    ],
)

CONSUMER_GROUP_PARTITION_METADATA_KEY = Schema(
    'ConsumerGroupPartitionMetadataKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
    ],
)

CONSUMER_GROUP_PARTITION_METADATA_VALUE = Schema(
    'ConsumerGroupPartitionMetadataValue', '0', flexible='0+',
    fields=[
        F('topics', '[]TopicMetadata', '0+', fields=[
            F('topic_id', 'uuid', '0+'),
            F('topic_name', 'string', '0+'),
            F('num_partitions', 'int32', '0+'),
            F('partition_metadata', '[]PartitionMetadata', '0+', fields=[
                F('partition', 'int32', '0+'),
                F('racks', '[]string', '0+'),
            ]),
        ]),
    ],
)

CONSUMER_GROUP_MEMBER_METADATA_KEY = Schema(
    'ConsumerGroupMemberMetadataKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
        F('member_id', 'string', '0'),
    ],
)

CONSUMER_GROUP_MEMBER_METADATA_VALUE = Schema(
    'ConsumerGroupMemberMetadataValue', '0', flexible='0+',
    fields=[
        F('instance_id', 'string', '0+', nullable='0+'),
        F('rack_id', 'string', '0+', nullable='0+'),
        F('client_id', 'string', '0+'),
        F('client_host', 'string', '0+'),
        F('subscribed_topic_names', '[]string', '0+'),
        F('subscribed_topic_regex', 'string', '0+', nullable='0+'),
        F('rebalance_timeout_ms', 'int32', '0+', default=-1),
        F('server_assignor', 'string', '0+', nullable='0+'),
        F('classic_member_metadata', 'ClassicMemberMetadata', '0+', nullable='0+', tag=0, tagged='0+', fields=[
            F('session_timeout_ms', 'int32', '0+'),
            F('supported_protocols', '[]ClassicProtocol', '0+', fields=[
                F('name', 'string', '0+'),
                F('metadata', 'bytes', '0+'),
            ]),
        ]),
    ],
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = Schema(
    'ConsumerGroupTargetAssignmentMetadataKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
    ],
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = Schema(
    'ConsumerGroupTargetAssignmentMetadataValue', '0', flexible='0+',
    fields=[
        F('assignment_epoch', 'int32', '0+'),
        F('assignment_timestamp', 'int64', '0+', tag=0, tagged='0+', ignorable=True),
    ],
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = Schema(
    'ConsumerGroupTargetAssignmentMemberKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
        F('member_id', 'string', '0'),
    ],
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Schema(
    'ConsumerGroupTargetAssignmentMemberValue', '0', flexible='0+',
    fields=[
        F('topic_partitions', '[]TopicPartition', '0+', fields=[
            F('topic_id', 'uuid', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
    ],
)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = Schema(
    'ConsumerGroupCurrentMemberAssignmentKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
        F('member_id', 'string', '0'),
    ],
)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = Schema(
    'ConsumerGroupCurrentMemberAssignmentValue', '0', flexible='0+',
    fields=[
        F('member_epoch', 'int32', '0+'),
        F('previous_member_epoch', 'int32', '0+'),
        F('state', 'int8', '0+'),
        F('assigned_partitions', '[]TopicPartitions', '0+', fields=[
            F('topic_id', 'uuid', '0+'),
            F('partitions', '[]int32', '0+'),
            F('assignment_epochs', '[]int32', '0+', nullable='0+', tag=0, tagged='0+', default=None),
        ]),
        F('partitions_pending_revocation', '[]TopicPartitions', '0+', fields=[
            F('topic_id', 'uuid', '0+'),
            F('partitions', '[]int32', '0+'),
            F('assignment_epochs', '[]int32', '0+', nullable='0+', tag=0, tagged='0+', default=None),
        ]),
    ],
)

CONSUMER_GROUP_REGULAR_EXPRESSION_KEY = Schema(
    'ConsumerGroupRegularExpressionKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
        F('regular_expression', 'string', '0'),
    ],
)

CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = Schema(
    'ConsumerGroupRegularExpressionValue', '0', flexible='0+',
    fields=[
        F('topics', '[]string', '0+'),
        F('version', 'int64', '0+'),
        F('timestamp', 'int64', '0+'),
    ],
)

__getattr__ = message_classes(OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE, GROUP_METADATA_KEY, GROUP_METADATA_VALUE, TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE, CONSUMER_GROUP_METADATA_KEY, CONSUMER_GROUP_METADATA_VALUE, CONSUMER_GROUP_PARTITION_METADATA_KEY, CONSUMER_GROUP_PARTITION_METADATA_VALUE, CONSUMER_GROUP_MEMBER_METADATA_KEY, CONSUMER_GROUP_MEMBER_METADATA_VALUE, CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE, CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE, CONSUMER_GROUP_REGULAR_EXPRESSION_KEY, CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE)

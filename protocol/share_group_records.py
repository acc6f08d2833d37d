"""KIP-932 share-group records (__consumer_offsets): schema data generated from Kafka's
definitions by tools/gen_schemas.py. Edit the generator, not this file. BY_TYPE maps a record
type (the key's int16 prefix; Kafka: CoordinatorRecordType) to its (key, value) schemas."""

from minibroker_protocol.schema import F, Message, Schema, message_classes

SHARE_GROUP_MEMBER_METADATA_KEY = Schema(
    'ShareGroupMemberMetadataKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
        F('member_id', 'string', '0'),
    ],
)

SHARE_GROUP_MEMBER_METADATA_VALUE = Schema(
    'ShareGroupMemberMetadataValue', '0', flexible='0+',
    fields=[
        F('rack_id', 'string', '0+', nullable='0+'),
        F('client_id', 'string', '0+'),
        F('client_host', 'string', '0+'),
        F('subscribed_topic_names', '[]string', '0+'),
    ],
)

SHARE_GROUP_METADATA_KEY = Schema(
    'ShareGroupMetadataKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
    ],
)

SHARE_GROUP_METADATA_VALUE = Schema(
    'ShareGroupMetadataValue', '0', flexible='0+',
    fields=[
        F('epoch', 'int32', '0+'),
        F('metadata_hash', 'int64', '0+'),
    ],
)

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = Schema(
    'ShareGroupTargetAssignmentMetadataKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
    ],
)

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = Schema(
    'ShareGroupTargetAssignmentMetadataValue', '0', flexible='0+',
    fields=[
        F('assignment_epoch', 'int32', '0+'),
        F('assignment_timestamp', 'int64', '0+', tag=0, tagged='0+', ignorable=True),
    ],
)

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = Schema(
    'ShareGroupTargetAssignmentMemberKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
        F('member_id', 'string', '0'),
    ],
)

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Schema(
    'ShareGroupTargetAssignmentMemberValue', '0', flexible='0+',
    fields=[
        F('topic_partitions', '[]TopicPartition', '0+', fields=[
            F('topic_id', 'uuid', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
    ],
)

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = Schema(
    'ShareGroupCurrentMemberAssignmentKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
        F('member_id', 'string', '0'),
    ],
)

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = Schema(
    'ShareGroupCurrentMemberAssignmentValue', '0', flexible='0+',
    fields=[
        F('member_epoch', 'int32', '0+'),
        F('previous_member_epoch', 'int32', '0+'),
        F('state', 'int8', '0+'),
        F('assigned_partitions', '[]TopicPartitions', '0+', fields=[
            F('topic_id', 'uuid', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
    ],
)

SHARE_GROUP_STATE_PARTITION_METADATA_KEY = Schema(
    'ShareGroupStatePartitionMetadataKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
    ],
)

SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = Schema(
    'ShareGroupStatePartitionMetadataValue', '0', flexible='0+',
    fields=[
        F('initializing_topics', '[]TopicPartitionsInfo', '0+', fields=[
            F('topic_id', 'uuid', '0+'),
            F('topic_name', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
        F('initialized_topics', '[]TopicPartitionsInfo', '0+', fields=[
            F('topic_id', 'uuid', '0+'),
            F('topic_name', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
        F('deleting_topics', '[]TopicInfo', '0+', fields=[
            F('topic_id', 'uuid', '0+'),
            F('topic_name', 'string', '0+'),
        ]),
    ],
)

BY_TYPE: dict[int, tuple[Schema[Message], Schema[Message]]] = {
    10: (SHARE_GROUP_MEMBER_METADATA_KEY, SHARE_GROUP_MEMBER_METADATA_VALUE),
    11: (SHARE_GROUP_METADATA_KEY, SHARE_GROUP_METADATA_VALUE),
    12: (SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    13: (SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    14: (SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    15: (SHARE_GROUP_STATE_PARTITION_METADATA_KEY, SHARE_GROUP_STATE_PARTITION_METADATA_VALUE),
}
__getattr__ = message_classes(SHARE_GROUP_MEMBER_METADATA_KEY, SHARE_GROUP_MEMBER_METADATA_VALUE, SHARE_GROUP_METADATA_KEY, SHARE_GROUP_METADATA_VALUE, SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE, SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE, SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE, SHARE_GROUP_STATE_PARTITION_METADATA_KEY, SHARE_GROUP_STATE_PARTITION_METADATA_VALUE)

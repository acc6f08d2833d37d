"""KIP-1071 streams-group records (__consumer_offsets): schema data generated from Kafka's
definitions by tools/gen_schemas.py. Edit the generator, not this file. BY_TYPE maps a record
type (the key's int16 prefix; Kafka: CoordinatorRecordType) to its (key, value) schemas."""

from minibroker_protocol.schema import F, Message, Schema, message_classes

STREAMS_GROUP_METADATA_KEY = Schema(
    'StreamsGroupMetadataKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
    ],
)

STREAMS_GROUP_METADATA_VALUE = Schema(
    'StreamsGroupMetadataValue', '0', flexible='0+',
    fields=[
        F('epoch', 'int32', '0+'),
        F('metadata_hash', 'int64', '0+'),
        F('validated_topology_epoch', 'int32', '0+', tag=0, tagged='0+', default=-1),
        F('last_assignment_configs', '[]LastAssignmentConfig', '0+', nullable='0+', tag=1, tagged='0+', default=None, fields=[
            F('key', 'string', '0+'),
            F('value', 'string', '0+'),
        ]),
        F('stored_description_topology_epoch', 'int32', '0+', tag=2, tagged='0+', default=-1),
        F('failed_description_topology_epoch', 'int32', '0+', tag=3, tagged='0+', default=-1),
    ],
)

STREAMS_GROUP_MEMBER_METADATA_KEY = Schema(
    'StreamsGroupMemberMetadataKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
        F('member_id', 'string', '0'),
    ],
)

STREAMS_GROUP_MEMBER_METADATA_VALUE = Schema(
    'StreamsGroupMemberMetadataValue', '0', flexible='0+',
    fields=[
        F('instance_id', 'string', '0+', nullable='0+'),
        F('rack_id', 'string', '0+', nullable='0+'),
        F('client_id', 'string', '0+'),
        F('client_host', 'string', '0+'),
        F('rebalance_timeout_ms', 'int32', '0+', default=-1),
        F('topology_epoch', 'int32', '0+'),
        F('process_id', 'string', '0+'),
        F('user_endpoint', 'Endpoint', '0+', nullable='0+', default=None, fields=[
            F('host', 'string', '0+'),
            F('port', 'uint16', '0+'),
        ]),
        F('client_tags', '[]KeyValue', '0+', fields=[
            F('key', 'string', '0+'),
            F('value', 'string', '0+'),
        ]),
    ],
)

STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = Schema(
    'StreamsGroupTargetAssignmentMetadataKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
    ],
)

STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = Schema(
    'StreamsGroupTargetAssignmentMetadataValue', '0', flexible='0+',
    fields=[
        F('assignment_epoch', 'int32', '0+'),
        F('assignment_timestamp', 'int64', '0+', tag=0, tagged='0+', ignorable=True),
    ],
)

STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = Schema(
    'StreamsGroupTargetAssignmentMemberKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
        F('member_id', 'string', '0'),
    ],
)

STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Schema(
    'StreamsGroupTargetAssignmentMemberValue', '0', flexible='0+',
    fields=[
        F('active_tasks', '[]TaskIds', '0+', fields=[
            F('subtopology_id', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
        F('standby_tasks', '[]TaskIds', '0+', fields=[
            F('subtopology_id', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
        F('warmup_tasks', '[]TaskIds', '0+', fields=[
            F('subtopology_id', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
    ],
)

STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = Schema(
    'StreamsGroupCurrentMemberAssignmentKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
        F('member_id', 'string', '0'),
    ],
)

STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = Schema(
    'StreamsGroupCurrentMemberAssignmentValue', '0', flexible='0+',
    fields=[
        F('member_epoch', 'int32', '0+'),
        F('previous_member_epoch', 'int32', '0+'),
        F('state', 'int8', '0+'),
        F('active_tasks', '[]TaskIds', '0+', fields=[
            F('subtopology_id', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
            F('assignment_epochs', '[]int32', '0+', nullable='0+', tag=0, tagged='0+', default=None),
        ]),
        F('standby_tasks', '[]TaskIds', '0+', fields=[
            F('subtopology_id', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
            F('assignment_epochs', '[]int32', '0+', nullable='0+', tag=0, tagged='0+', default=None),
        ]),
        F('warmup_tasks', '[]TaskIds', '0+', fields=[
            F('subtopology_id', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
            F('assignment_epochs', '[]int32', '0+', nullable='0+', tag=0, tagged='0+', default=None),
        ]),
        F('active_tasks_pending_revocation', '[]TaskIds', '0+', fields=[
            F('subtopology_id', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
            F('assignment_epochs', '[]int32', '0+', nullable='0+', tag=0, tagged='0+', default=None),
        ]),
        F('standby_tasks_pending_revocation', '[]TaskIds', '0+', fields=[
            F('subtopology_id', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
            F('assignment_epochs', '[]int32', '0+', nullable='0+', tag=0, tagged='0+', default=None),
        ]),
        F('warmup_tasks_pending_revocation', '[]TaskIds', '0+', fields=[
            F('subtopology_id', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
            F('assignment_epochs', '[]int32', '0+', nullable='0+', tag=0, tagged='0+', default=None),
        ]),
    ],
)

STREAMS_GROUP_TOPOLOGY_KEY = Schema(
    'StreamsGroupTopologyKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
    ],
)

STREAMS_GROUP_TOPOLOGY_VALUE = Schema(
    'StreamsGroupTopologyValue', '0', flexible='0+',
    fields=[
        F('epoch', 'int32', '0+'),
        F('subtopologies', '[]Subtopology', '0+', fields=[
            F('subtopology_id', 'string', '0+'),
            F('source_topics', '[]string', '0+'),
            F('source_topic_regex', '[]string', '0+'),
            F('state_changelog_topics', '[]TopicInfo', '0+', fields=[
                F('name', 'string', '0+'),
                F('partitions', 'int32', '0+'),
                F('replication_factor', 'int16', '0+'),
                F('topic_configs', '[]TopicConfig', '0+', fields=[
                    F('key', 'string', '0+'),
                    F('value', 'string', '0+'),
                ]),
            ]),
            F('repartition_sink_topics', '[]string', '0+'),
            F('repartition_source_topics', '[]TopicInfo', '0+', fields=[
                F('name', 'string', '0+'),
                F('partitions', 'int32', '0+'),
                F('replication_factor', 'int16', '0+'),
                F('topic_configs', '[]TopicConfig', '0+', fields=[
                    F('key', 'string', '0+'),
                    F('value', 'string', '0+'),
                ]),
            ]),
            F('copartition_groups', '[]CopartitionGroup', '0+', fields=[
                F('source_topics', '[]int16', '0+'),
                F('source_topic_regex', '[]int16', '0+'),
                F('repartition_source_topics', '[]int16', '0+'),
            ]),
        ]),
    ],
)

BY_TYPE: dict[int, tuple[Schema[Message], Schema[Message]]] = {
    17: (STREAMS_GROUP_METADATA_KEY, STREAMS_GROUP_METADATA_VALUE),
    19: (STREAMS_GROUP_MEMBER_METADATA_KEY, STREAMS_GROUP_MEMBER_METADATA_VALUE),
    20: (STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    21: (STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    22: (STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    23: (STREAMS_GROUP_TOPOLOGY_KEY, STREAMS_GROUP_TOPOLOGY_VALUE),
}
__getattr__ = message_classes(STREAMS_GROUP_METADATA_KEY, STREAMS_GROUP_METADATA_VALUE, STREAMS_GROUP_MEMBER_METADATA_KEY, STREAMS_GROUP_MEMBER_METADATA_VALUE, STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE, STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE, STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE, STREAMS_GROUP_TOPOLOGY_KEY, STREAMS_GROUP_TOPOLOGY_VALUE)

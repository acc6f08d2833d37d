"""OffsetCommit (api key 8): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'OffsetCommitRequest', '0-10', flexible='8+',
    fields=[
        F('group_id', 'string', '0+'),
        F('generation_id_or_member_epoch', 'int32', '1+', default=-1, ignorable=True),
        F('member_id', 'string', '1+', ignorable=True),
        F('group_instance_id', 'string', '7+', nullable='7+', default=None),
        F('retention_time_ms', 'int64', '2-4', default=-1, ignorable=True),
        F('topics', '[]OffsetCommitRequestTopic', '0+', fields=[
            F('name', 'string', '0-9'),
            F('topic_id', 'uuid', '10+'),
            F('partitions', '[]OffsetCommitRequestPartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('committed_offset', 'int64', '0+'),
                F('committed_leader_epoch', 'int32', '6+', default=-1, ignorable=True),
                F('commit_timestamp', 'int64', '1', default=-1),
                F('committed_metadata', 'string', '0+', nullable='0+'),
            ]),
        ]),
    ],
)

RESPONSE = Schema(
    'OffsetCommitResponse', '0-10', flexible='8+',
    fields=[
        F('throttle_time_ms', 'int32', '3+', ignorable=True),
        F('topics', '[]OffsetCommitResponseTopic', '0+', fields=[
            F('name', 'string', '0-9'),
            F('topic_id', 'uuid', '10+'),
            F('partitions', '[]OffsetCommitResponsePartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
            ]),
        ]),
    ],
)

API = Api(8, 'OffsetCommit', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

"""OffsetFetch (api key 9): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'OffsetFetchRequest', '0-10', flexible='6+',
    fields=[
        F('group_id', 'string', '0-7'),
        F('topics', '[]OffsetFetchRequestTopic', '0-7', nullable='2-7', fields=[
            F('name', 'string', '0-7'),
            F('partition_indexes', '[]int32', '0-7'),
        ]),
        F('groups', '[]OffsetFetchRequestGroup', '8+', fields=[
            F('group_id', 'string', '8+'),
            F('member_id', 'string', '9+', nullable='9+', default=None, ignorable=True),
            F('member_epoch', 'int32', '9+', default=-1, ignorable=True),
            F('topics', '[]OffsetFetchRequestTopics', '8+', nullable='8+', fields=[
                F('name', 'string', '8-9'),
                F('topic_id', 'uuid', '10+'),
                F('partition_indexes', '[]int32', '8+'),
            ]),
        ]),
        F('require_stable', 'bool', '7+'),
    ],
)

RESPONSE = Schema(
    'OffsetFetchResponse', '0-10', flexible='6+',
    fields=[
        F('throttle_time_ms', 'int32', '3+', ignorable=True),
        F('topics', '[]OffsetFetchResponseTopic', '0-7', fields=[
            F('name', 'string', '0-7'),
            F('partitions', '[]OffsetFetchResponsePartition', '0-7', fields=[
                F('partition_index', 'int32', '0-7'),
                F('committed_offset', 'int64', '0-7'),
                F('committed_leader_epoch', 'int32', '5-7', default=-1, ignorable=True),
                F('metadata', 'string', '0-7', nullable='0-7'),
                F('error_code', 'int16', '0-7'),
            ]),
        ]),
        F('error_code', 'int16', '2-7', ignorable=True),
        F('groups', '[]OffsetFetchResponseGroup', '8+', fields=[
            F('group_id', 'string', '8+'),
            F('topics', '[]OffsetFetchResponseTopics', '8+', fields=[
                F('name', 'string', '8-9'),
                F('topic_id', 'uuid', '10+'),
                F('partitions', '[]OffsetFetchResponsePartitions', '8+', fields=[
                    F('partition_index', 'int32', '8+'),
                    F('committed_offset', 'int64', '8+'),
                    F('committed_leader_epoch', 'int32', '8+', default=-1, ignorable=True),
                    F('metadata', 'string', '8+', nullable='8+'),
                    F('error_code', 'int16', '8+'),
                ]),
            ]),
            F('error_code', 'int16', '8+'),
        ]),
    ],
)

API = Api(9, 'OffsetFetch', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

"""DescribeShareGroupOffsets (api key 90): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'DescribeShareGroupOffsetsRequest', '0-1', flexible='0+',
    fields=[
        F('groups', '[]DescribeShareGroupOffsetsRequestGroup', '0+', fields=[
            F('group_id', 'string', '0+'),
            F('topics', '[]DescribeShareGroupOffsetsRequestTopic', '0+', nullable='0+', fields=[
                F('topic_name', 'string', '0+'),
                F('partitions', '[]int32', '0+'),
            ]),
        ]),
    ],
)

RESPONSE = Schema(
    'DescribeShareGroupOffsetsResponse', '0-1', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('groups', '[]DescribeShareGroupOffsetsResponseGroup', '0+', fields=[
            F('group_id', 'string', '0+'),
            F('topics', '[]DescribeShareGroupOffsetsResponseTopic', '0+', fields=[
                F('topic_name', 'string', '0+'),
                F('topic_id', 'uuid', '0+'),
                F('partitions', '[]DescribeShareGroupOffsetsResponsePartition', '0+', fields=[
                    F('partition_index', 'int32', '0+'),
                    F('start_offset', 'int64', '0+'),
                    F('leader_epoch', 'int32', '0+'),
                    F('lag', 'int64', '1+', default=-1, ignorable=True),
                    F('error_code', 'int16', '0+'),
                    F('error_message', 'string', '0+', nullable='0+', default=None),
                ]),
            ]),
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+', default=None),
        ]),
    ],
)

API = Api(90, 'DescribeShareGroupOffsets', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

"""ListOffsets (api key 2): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'ListOffsetsRequest', '0-11', flexible='6+',
    fields=[
        F('replica_id', 'int32', '0+'),
        F('isolation_level', 'int8', '2+'),
        F('topics', '[]ListOffsetsTopic', '0+', fields=[
            F('name', 'string', '0+'),
            F('partitions', '[]ListOffsetsPartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('current_leader_epoch', 'int32', '4+', default=-1, ignorable=True),
                F('timestamp', 'int64', '0+'),
                F('max_num_offsets', 'int32', '0', default=1),
            ]),
        ]),
        F('timeout_ms', 'int32', '10+', ignorable=True),
    ],
)

RESPONSE = Schema(
    'ListOffsetsResponse', '0-11', flexible='6+',
    fields=[
        F('throttle_time_ms', 'int32', '2+', ignorable=True),
        F('topics', '[]ListOffsetsTopicResponse', '0+', fields=[
            F('name', 'string', '0+'),
            F('partitions', '[]ListOffsetsPartitionResponse', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
                F('old_style_offsets', '[]int64', '0'),
                F('timestamp', 'int64', '1+', default=-1),
                F('offset', 'int64', '1+', default=-1),
                F('leader_epoch', 'int32', '4+', default=-1),
            ]),
        ]),
    ],
)

API = Api(2, 'ListOffsets', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

"""OffsetDelete (api key 47): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'OffsetDeleteRequest', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0+'),
        F('topics', '[]OffsetDeleteRequestTopic', '0+', fields=[
            F('name', 'string', '0+'),
            F('partitions', '[]OffsetDeleteRequestPartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
            ]),
        ]),
    ],
)

RESPONSE = Schema(
    'OffsetDeleteResponse', '0', flexible='none',
    fields=[
        F('error_code', 'int16', '0+'),
        F('throttle_time_ms', 'int32', '0+', ignorable=True),
        F('topics', '[]OffsetDeleteResponseTopic', '0+', fields=[
            F('name', 'string', '0+'),
            F('partitions', '[]OffsetDeleteResponsePartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
            ]),
        ]),
    ],
)

API = Api(47, 'OffsetDelete', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

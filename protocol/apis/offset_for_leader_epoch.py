"""OffsetForLeaderEpoch (api key 23): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'OffsetForLeaderEpochRequest', '0-4', flexible='4+',
    fields=[
        F('replica_id', 'int32', '3+', default=-2, ignorable=True),
        F('topics', '[]OffsetForLeaderTopic', '0+', fields=[
            F('topic', 'string', '0+'),
            F('partitions', '[]OffsetForLeaderPartition', '0+', fields=[
                F('partition', 'int32', '0+'),
                F('current_leader_epoch', 'int32', '2+', default=-1, ignorable=True),
                F('leader_epoch', 'int32', '0+'),
            ]),
        ]),
    ],
)

RESPONSE = Schema(
    'OffsetForLeaderEpochResponse', '0-4', flexible='4+',
    fields=[
        F('throttle_time_ms', 'int32', '2+', ignorable=True),
        F('topics', '[]OffsetForLeaderTopicResult', '0+', fields=[
            F('topic', 'string', '0+'),
            F('partitions', '[]EpochEndOffset', '0+', fields=[
                F('error_code', 'int16', '0+'),
                F('partition', 'int32', '0+'),
                F('leader_epoch', 'int32', '1+', default=-1, ignorable=True),
                F('end_offset', 'int64', '0+', default=-1),
            ]),
        ]),
    ],
)

API = Api(23, 'OffsetForLeaderEpoch', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

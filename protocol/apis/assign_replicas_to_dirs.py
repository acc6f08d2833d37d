"""AssignReplicasToDirs (api key 73): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'AssignReplicasToDirsRequest', '0', flexible='0+',
    fields=[
        F('broker_id', 'int32', '0+'),
        F('broker_epoch', 'int64', '0+', default=-1),
        F('directories', '[]DirectoryData', '0+', fields=[
            F('id', 'uuid', '0+'),
            F('topics', '[]TopicData', '0+', fields=[
                F('topic_id', 'uuid', '0+'),
                F('partitions', '[]PartitionData', '0+', fields=[
                    F('partition_index', 'int32', '0+'),
                ]),
            ]),
        ]),
    ],
)

RESPONSE = Schema(
    'AssignReplicasToDirsResponse', '0', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('directories', '[]DirectoryData', '0+', fields=[
            F('id', 'uuid', '0+'),
            F('topics', '[]TopicData', '0+', fields=[
                F('topic_id', 'uuid', '0+'),
                F('partitions', '[]PartitionData', '0+', fields=[
                    F('partition_index', 'int32', '0+'),
                    F('error_code', 'int16', '0+'),
                ]),
            ]),
        ]),
    ],
)

API = Api(73, 'AssignReplicasToDirs', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

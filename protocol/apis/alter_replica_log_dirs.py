"""AlterReplicaLogDirs (api key 34): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'AlterReplicaLogDirsRequest', '1-2', flexible='2+',
    fields=[
        F('dirs', '[]AlterReplicaLogDir', '0+', fields=[
            F('path', 'string', '0+'),
            F('topics', '[]AlterReplicaLogDirTopic', '0+', fields=[
                F('name', 'string', '0+'),
                F('partitions', '[]int32', '0+'),
            ]),
        ]),
    ],
)

RESPONSE = Schema(
    'AlterReplicaLogDirsResponse', '1-2', flexible='2+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('results', '[]AlterReplicaLogDirTopicResult', '0+', fields=[
            F('topic_name', 'string', '0+'),
            F('partitions', '[]AlterReplicaLogDirPartitionResult', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
            ]),
        ]),
    ],
)

API = Api(34, 'AlterReplicaLogDirs', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

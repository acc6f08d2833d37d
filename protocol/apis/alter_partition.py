"""AlterPartition (api key 56): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'AlterPartitionRequest', '2-3', flexible='0+',
    fields=[
        F('broker_id', 'int32', '0+'),
        F('broker_epoch', 'int64', '0+', default=-1),
        F('topics', '[]TopicData', '0+', fields=[
            F('topic_id', 'uuid', '2+', ignorable=True),
            F('partitions', '[]PartitionData', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('leader_epoch', 'int32', '0+'),
                F('new_isr', '[]int32', '0-2'),
                F('new_isr_with_epochs', '[]BrokerState', '3+', fields=[
                    F('broker_id', 'int32', '3+'),
                    F('broker_epoch', 'int64', '3+', default=-1),
                ]),
                F('leader_recovery_state', 'int8', '1+'),
                F('partition_epoch', 'int32', '0+'),
            ]),
        ]),
    ],
)

RESPONSE = Schema(
    'AlterPartitionResponse', '2-3', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('topics', '[]TopicData', '0+', fields=[
            F('topic_id', 'uuid', '2+', ignorable=True),
            F('partitions', '[]PartitionData', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
                F('leader_id', 'int32', '0+'),
                F('leader_epoch', 'int32', '0+'),
                F('isr', '[]int32', '0+'),
                F('leader_recovery_state', 'int8', '1+', ignorable=True),
                F('partition_epoch', 'int32', '0+'),
            ]),
        ]),
    ],
)

API = Api(56, 'AlterPartition', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

"""AlterPartitionReassignments (api key 45): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'AlterPartitionReassignmentsRequest', '0-1', flexible='0+',
    fields=[
        F('timeout_ms', 'int32', '0+', default=60000),
        F('allow_replication_factor_change', 'bool', '1+', default=True),
        F('topics', '[]ReassignableTopic', '0+', fields=[
            F('name', 'string', '0+'),
            F('partitions', '[]ReassignablePartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('replicas', '[]int32', '0+', nullable='0+', default=None),
            ]),
        ]),
    ],
)

RESPONSE = Schema(
    'AlterPartitionReassignmentsResponse', '0-1', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('allow_replication_factor_change', 'bool', '1+', default=True, ignorable=True),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
        F('responses', '[]ReassignableTopicResponse', '0+', fields=[
            F('name', 'string', '0+'),
            F('partitions', '[]ReassignablePartitionResponse', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
                F('error_message', 'string', '0+', nullable='0+'),
            ]),
        ]),
    ],
)

API = Api(45, 'AlterPartitionReassignments', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

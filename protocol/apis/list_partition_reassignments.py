"""ListPartitionReassignments (api key 46): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'ListPartitionReassignmentsRequest', '0', flexible='0+',
    fields=[
        F('timeout_ms', 'int32', '0+', default=60000),
        F('topics', '[]ListPartitionReassignmentsTopics', '0+', nullable='0+', default=None, fields=[
            F('name', 'string', '0+'),
            F('partition_indexes', '[]int32', '0+'),
        ]),
    ],
)

RESPONSE = Schema(
    'ListPartitionReassignmentsResponse', '0', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
        F('topics', '[]OngoingTopicReassignment', '0+', fields=[
            F('name', 'string', '0+'),
            F('partitions', '[]OngoingPartitionReassignment', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('replicas', '[]int32', '0+'),
                F('adding_replicas', '[]int32', '0+'),
                F('removing_replicas', '[]int32', '0+'),
            ]),
        ]),
    ],
)

API = Api(46, 'ListPartitionReassignments', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

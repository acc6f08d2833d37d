"""CreatePartitions (api key 37): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'CreatePartitionsRequest', '0-3', flexible='2+',
    fields=[
        F('topics', '[]CreatePartitionsTopic', '0+', fields=[
            F('name', 'string', '0+'),
            F('count', 'int32', '0+'),
            F('assignments', '[]CreatePartitionsAssignment', '0+', nullable='0+', fields=[
                F('broker_ids', '[]int32', '0+'),
            ]),
        ]),
        F('timeout_ms', 'int32', '0+'),
        F('validate_only', 'bool', '0+'),
    ],
)

RESPONSE = Schema(
    'CreatePartitionsResponse', '0-3', flexible='2+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('results', '[]CreatePartitionsTopicResult', '0+', fields=[
            F('name', 'string', '0+'),
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+', default=None),
        ]),
    ],
)

API = Api(37, 'CreatePartitions', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

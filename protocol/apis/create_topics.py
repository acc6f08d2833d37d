"""CreateTopics (api key 19): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'CreateTopicsRequest', '0-7', flexible='5+',
    fields=[
        F('topics', '[]CreatableTopic', '0+', fields=[
            F('name', 'string', '0+'),
            F('num_partitions', 'int32', '0+'),
            F('replication_factor', 'int16', '0+'),
            F('assignments', '[]CreatableReplicaAssignment', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('broker_ids', '[]int32', '0+'),
            ]),
            F('configs', '[]CreatableTopicConfig', '0+', fields=[
                F('name', 'string', '0+'),
                F('value', 'string', '0+', nullable='0+'),
            ]),
        ]),
        F('timeout_ms', 'int32', '0+', default=60000),
        F('validate_only', 'bool', '1+'),
    ],
)

RESPONSE = Schema(
    'CreateTopicsResponse', '0-7', flexible='5+',
    fields=[
        F('throttle_time_ms', 'int32', '2+', ignorable=True),
        F('topics', '[]CreatableTopicResult', '0+', fields=[
            F('name', 'string', '0+'),
            F('topic_id', 'uuid', '7+', ignorable=True),
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '1+', nullable='0+', ignorable=True),
            F('topic_config_error_code', 'int16', '5+', tag=0, tagged='5+', ignorable=True),
            F('num_partitions', 'int32', '5+', default=-1, ignorable=True),
            F('replication_factor', 'int16', '5+', default=-1, ignorable=True),
            F('configs', '[]CreatableTopicConfigs', '5+', nullable='5+', ignorable=True, fields=[
                F('name', 'string', '5+'),
                F('value', 'string', '5+', nullable='5+'),
                F('read_only', 'bool', '5+'),
                F('config_source', 'int8', '5+', default=-1, ignorable=True),
                F('is_sensitive', 'bool', '5+'),
            ]),
        ]),
    ],
)

API = Api(19, 'CreateTopics', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

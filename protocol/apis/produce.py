"""Produce (api key 0): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'ProduceRequest', '0-13', flexible='9+',
    fields=[
        F('transactional_id', 'string', '3+', nullable='3+', default=None),
        F('acks', 'int16', '0+'),
        F('timeout_ms', 'int32', '0+'),
        F('topic_data', '[]TopicProduceData', '0+', fields=[
            F('name', 'string', '0-12'),
            F('topic_id', 'uuid', '13+'),
            F('partition_data', '[]PartitionProduceData', '0+', fields=[
                F('index', 'int32', '0+'),
                F('records', 'records', '0+', nullable='0+'),
            ]),
        ]),
    ],
)

RESPONSE = Schema(
    'ProduceResponse', '0-13', flexible='9+',
    fields=[
        F('responses', '[]TopicProduceResponse', '0+', fields=[
            F('name', 'string', '0-12'),
            F('topic_id', 'uuid', '13+'),
            F('partition_responses', '[]PartitionProduceResponse', '0+', fields=[
                F('index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
                F('base_offset', 'int64', '0+'),
                F('log_append_time_ms', 'int64', '2+', default=-1, ignorable=True),
                F('log_start_offset', 'int64', '5+', default=-1, ignorable=True),
                F('record_errors', '[]BatchIndexAndErrorMessage', '8+', ignorable=True, fields=[
                    F('batch_index', 'int32', '8+'),
                    F('batch_index_error_message', 'string', '8+', nullable='8+', default=None),
                ]),
                F('error_message', 'string', '8+', nullable='8+', default=None, ignorable=True),
                F('current_leader', 'LeaderIdAndEpoch', '10+', tag=0, tagged='10+', fields=[
                    F('leader_id', 'int32', '10+', default=-1),
                    F('leader_epoch', 'int32', '10+', default=-1),
                ]),
            ]),
        ]),
        F('throttle_time_ms', 'int32', '1+', ignorable=True),
        F('node_endpoints', '[]NodeEndpoint', '10+', tag=0, tagged='10+', fields=[
            F('node_id', 'int32', '10+'),
            F('host', 'string', '10+'),
            F('port', 'int32', '10+'),
            F('rack', 'string', '10+', nullable='10+', default=None),
        ]),
    ],
)

API = Api(0, 'Produce', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

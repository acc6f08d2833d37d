"""DescribeProducers (api key 61): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'DescribeProducersRequest', '0', flexible='0+',
    fields=[
        F('topics', '[]TopicRequest', '0+', fields=[
            F('name', 'string', '0+'),
            F('partition_indexes', '[]int32', '0+'),
        ]),
    ],
)

RESPONSE = Schema(
    'DescribeProducersResponse', '0', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('topics', '[]TopicResponse', '0+', fields=[
            F('name', 'string', '0+'),
            F('partitions', '[]PartitionResponse', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
                F('error_message', 'string', '0+', nullable='0+', default=None),
                F('active_producers', '[]ProducerState', '0+', fields=[
                    F('producer_id', 'int64', '0+'),
                    F('producer_epoch', 'int32', '0+'),
                    F('last_sequence', 'int32', '0+', default=-1),
                    F('last_timestamp', 'int64', '0+', default=-1),
                    F('coordinator_epoch', 'int32', '0+'),
                    F('current_txn_start_offset', 'int64', '0+', default=-1),
                ]),
            ]),
        ]),
    ],
)

API = Api(61, 'DescribeProducers', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

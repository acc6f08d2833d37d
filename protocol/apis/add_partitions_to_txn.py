"""AddPartitionsToTxn (api key 24): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'AddPartitionsToTxnRequest', '0-5', flexible='3+',
    fields=[
        F('transactions', '[]AddPartitionsToTxnTransaction', '4+', fields=[
            F('transactional_id', 'string', '4+'),
            F('producer_id', 'int64', '4+'),
            F('producer_epoch', 'int16', '4+'),
            F('verify_only', 'bool', '4+'),
            F('topics', '[]AddPartitionsToTxnTopic', '4+', fields=[
                F('name', 'string', '0+'),
                F('partitions', '[]int32', '0+'),
            ]),
        ]),
        F('v3_and_below_transactional_id', 'string', '0-3'),
        F('v3_and_below_producer_id', 'int64', '0-3'),
        F('v3_and_below_producer_epoch', 'int16', '0-3'),
        F('v3_and_below_topics', '[]AddPartitionsToTxnTopic', '0-3', fields=[
            F('name', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
    ],
)

RESPONSE = Schema(
    'AddPartitionsToTxnResponse', '0-5', flexible='3+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '4+', ignorable=True),
        F('results_by_transaction', '[]AddPartitionsToTxnResult', '4+', fields=[
            F('transactional_id', 'string', '4+'),
            F('topic_results', '[]AddPartitionsToTxnTopicResult', '4+', fields=[
                F('name', 'string', '0+'),
                F('results_by_partition', '[]AddPartitionsToTxnPartitionResult', '0+', fields=[
                    F('partition_index', 'int32', '0+'),
                    F('partition_error_code', 'int16', '0+'),
                ]),
            ]),
        ]),
        F('results_by_topic_v3_and_below', '[]AddPartitionsToTxnTopicResult', '0-3', fields=[
            F('name', 'string', '0+'),
            F('results_by_partition', '[]AddPartitionsToTxnPartitionResult', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('partition_error_code', 'int16', '0+'),
            ]),
        ]),
    ],
)

API = Api(24, 'AddPartitionsToTxn', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

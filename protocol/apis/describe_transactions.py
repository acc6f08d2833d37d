"""DescribeTransactions (api key 65): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'DescribeTransactionsRequest', '0', flexible='0+',
    fields=[
        F('transactional_ids', '[]string', '0+'),
    ],
)

RESPONSE = Schema(
    'DescribeTransactionsResponse', '0', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('transaction_states', '[]TransactionState', '0+', fields=[
            F('error_code', 'int16', '0+'),
            F('transactional_id', 'string', '0+'),
            F('transaction_state', 'string', '0+'),
            F('transaction_timeout_ms', 'int32', '0+'),
            F('transaction_start_time_ms', 'int64', '0+'),
            F('producer_id', 'int64', '0+'),
            F('producer_epoch', 'int16', '0+'),
            F('topics', '[]TopicData', '0+', fields=[
                F('topic', 'string', '0+'),
                F('partitions', '[]int32', '0+'),
            ]),
        ]),
    ],
)

API = Api(65, 'DescribeTransactions', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

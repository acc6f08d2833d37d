"""ListTransactions (api key 66): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'ListTransactionsRequest', '0-2', flexible='0+',
    fields=[
        F('state_filters', '[]string', '0+'),
        F('producer_id_filters', '[]int64', '0+'),
        F('duration_filter', 'int64', '1+', default=-1),
        F('transactional_id_pattern', 'string', '2+', nullable='2+', default=None),
    ],
)

RESPONSE = Schema(
    'ListTransactionsResponse', '0-2', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('unknown_state_filters', '[]string', '0+'),
        F('transaction_states', '[]TransactionState', '0+', fields=[
            F('transactional_id', 'string', '0+'),
            F('producer_id', 'int64', '0+'),
            F('transaction_state', 'string', '0+'),
        ]),
    ],
)

API = Api(66, 'ListTransactions', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

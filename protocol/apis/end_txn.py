"""EndTxn (api key 26): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'EndTxnRequest', '0-5', flexible='3+',
    fields=[
        F('transactional_id', 'string', '0+'),
        F('producer_id', 'int64', '0+'),
        F('producer_epoch', 'int16', '0+'),
        F('committed', 'bool', '0+'),
    ],
)

RESPONSE = Schema(
    'EndTxnResponse', '0-5', flexible='3+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('producer_id', 'int64', '5+', default=-1, ignorable=True),
        F('producer_epoch', 'int16', '5+', default=-1, ignorable=True),
    ],
)

API = Api(26, 'EndTxn', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

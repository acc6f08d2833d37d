"""AddOffsetsToTxn (api key 25): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'AddOffsetsToTxnRequest', '0-4', flexible='3+',
    fields=[
        F('transactional_id', 'string', '0+'),
        F('producer_id', 'int64', '0+'),
        F('producer_epoch', 'int16', '0+'),
        F('group_id', 'string', '0+'),
    ],
)

RESPONSE = Schema(
    'AddOffsetsToTxnResponse', '0-4', flexible='3+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
    ],
)

API = Api(25, 'AddOffsetsToTxn', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

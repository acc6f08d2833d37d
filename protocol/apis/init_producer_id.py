"""InitProducerId (api key 22): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'InitProducerIdRequest', '0-5', flexible='2+',
    fields=[
        F('transactional_id', 'string', '0+', nullable='0+'),
        F('transaction_timeout_ms', 'int32', '0+'),
        F('producer_id', 'int64', '3+', default=-1),
        F('producer_epoch', 'int16', '3+', default=-1),
    ],
)

RESPONSE = Schema(
    'InitProducerIdResponse', '0-5', flexible='2+',
    fields=[
        F('throttle_time_ms', 'int32', '0+', ignorable=True),
        F('error_code', 'int16', '0+'),
        F('producer_id', 'int64', '0+', default=-1),
        F('producer_epoch', 'int16', '0+'),
    ],
)

API = Api(22, 'InitProducerId', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

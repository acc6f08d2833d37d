"""AllocateProducerIds (api key 67): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'AllocateProducerIdsRequest', '0', flexible='0+',
    fields=[
        F('broker_id', 'int32', '0+'),
        F('broker_epoch', 'int64', '0+', default=-1),
    ],
)

RESPONSE = Schema(
    'AllocateProducerIdsResponse', '0', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('producer_id_start', 'int64', '0+'),
        F('producer_id_len', 'int32', '0+'),
    ],
)

API = Api(67, 'AllocateProducerIds', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

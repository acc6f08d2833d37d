"""ExpireDelegationToken (api key 40): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'ExpireDelegationTokenRequest', '1-2', flexible='2+',
    fields=[
        F('hmac', 'bytes', '0+'),
        F('expiry_time_period_ms', 'int64', '0+'),
    ],
)

RESPONSE = Schema(
    'ExpireDelegationTokenResponse', '1-2', flexible='2+',
    fields=[
        F('error_code', 'int16', '0+'),
        F('expiry_timestamp_ms', 'int64', '0+'),
        F('throttle_time_ms', 'int32', '0+'),
    ],
)

API = Api(40, 'ExpireDelegationToken', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

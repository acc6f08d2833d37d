"""SaslHandshake (api key 17): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'SaslHandshakeRequest', '0-1', flexible='none',
    fields=[
        F('mechanism', 'string', '0+'),
    ],
)

RESPONSE = Schema(
    'SaslHandshakeResponse', '0-1', flexible='none',
    fields=[
        F('error_code', 'int16', '0+'),
        F('mechanisms', '[]string', '0+'),
    ],
)

API = Api(17, 'SaslHandshake', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

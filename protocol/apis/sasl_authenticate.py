"""SaslAuthenticate (api key 36): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'SaslAuthenticateRequest', '0-2', flexible='2+',
    fields=[
        F('auth_bytes', 'bytes', '0+'),
    ],
)

RESPONSE = Schema(
    'SaslAuthenticateResponse', '0-2', flexible='2+',
    fields=[
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
        F('auth_bytes', 'bytes', '0+'),
        F('session_lifetime_ms', 'int64', '1+', ignorable=True),
    ],
)

API = Api(36, 'SaslAuthenticate', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

"""Envelope (api key 58): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'EnvelopeRequest', '0', flexible='0+',
    fields=[
        F('request_data', 'bytes', '0+'),
        F('request_principal', 'bytes', '0+', nullable='0+'),
        F('client_host_address', 'bytes', '0+'),
    ],
)

RESPONSE = Schema(
    'EnvelopeResponse', '0', flexible='0+',
    fields=[
        F('response_data', 'bytes', '0+', nullable='0+', default=None),
        F('error_code', 'int16', '0+'),
    ],
)

API = Api(58, 'Envelope', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

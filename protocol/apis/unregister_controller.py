"""UnregisterController (api key 94): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'UnregisterControllerRequest', '0', flexible='0+',
    fields=[
        F('controller_id', 'int32', '0+'),
    ],
)

RESPONSE = Schema(
    'UnregisterControllerResponse', '0', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
    ],
)

API = Api(94, 'UnregisterController', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

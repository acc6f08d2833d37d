"""FindCoordinator (api key 10): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'FindCoordinatorRequest', '0-6', flexible='3+',
    fields=[
        F('key', 'string', '0-3'),
        F('key_type', 'int8', '1+'),
        F('coordinator_keys', '[]string', '4+'),
    ],
)

RESPONSE = Schema(
    'FindCoordinatorResponse', '0-6', flexible='3+',
    fields=[
        F('throttle_time_ms', 'int32', '1+', ignorable=True),
        F('error_code', 'int16', '0-3'),
        F('error_message', 'string', '1-3', nullable='1-3', ignorable=True),
        F('node_id', 'int32', '0-3'),
        F('host', 'string', '0-3'),
        F('port', 'int32', '0-3'),
        F('coordinators', '[]Coordinator', '4+', fields=[
            F('key', 'string', '4+'),
            F('node_id', 'int32', '4+'),
            F('host', 'string', '4+'),
            F('port', 'int32', '4+'),
            F('error_code', 'int16', '4+'),
            F('error_message', 'string', '4+', nullable='4+', ignorable=True),
        ]),
    ],
)

API = Api(10, 'FindCoordinator', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

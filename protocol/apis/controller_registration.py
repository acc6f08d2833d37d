"""ControllerRegistration (api key 70): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'ControllerRegistrationRequest', '0', flexible='0+',
    fields=[
        F('controller_id', 'int32', '0+'),
        F('incarnation_id', 'uuid', '0+'),
        F('zk_migration_ready', 'bool', '0+'),
        F('listeners', '[]Listener', '0+', fields=[
            F('name', 'string', '0+'),
            F('host', 'string', '0+'),
            F('port', 'uint16', '0+'),
            F('security_protocol', 'int16', '0+'),
        ]),
        F('features', '[]Feature', '0+', fields=[
            F('name', 'string', '0+'),
            F('min_supported_version', 'int16', '0+'),
            F('max_supported_version', 'int16', '0+'),
        ]),
    ],
)

RESPONSE = Schema(
    'ControllerRegistrationResponse', '0', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
    ],
)

API = Api(70, 'ControllerRegistration', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

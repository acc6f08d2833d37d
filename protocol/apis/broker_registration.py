"""BrokerRegistration (api key 62): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'BrokerRegistrationRequest', '0-4', flexible='0+',
    fields=[
        F('broker_id', 'int32', '0+'),
        F('cluster_id', 'string', '0+'),
        F('incarnation_id', 'uuid', '0+'),
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
        F('rack', 'string', '0+', nullable='0+'),
        F('is_migrating_zk_broker', 'bool', '1+'),
        F('log_dirs', '[]uuid', '2+', ignorable=True),
        F('previous_broker_epoch', 'int64', '3+', default=-1, ignorable=True),
    ],
)

RESPONSE = Schema(
    'BrokerRegistrationResponse', '0-4', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('broker_epoch', 'int64', '0+', default=-1),
    ],
)

API = Api(62, 'BrokerRegistration', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

"""BrokerHeartbeat (api key 63): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'BrokerHeartbeatRequest', '0-2', flexible='0+',
    fields=[
        F('broker_id', 'int32', '0+'),
        F('broker_epoch', 'int64', '0+', default=-1),
        F('current_metadata_offset', 'int64', '0+'),
        F('want_fence', 'bool', '0+'),
        F('want_shut_down', 'bool', '0+'),
        F('offline_log_dirs', '[]uuid', '1+', tag=0, tagged='1+'),
        F('cordoned_log_dirs', '[]uuid', '2+', nullable='2+', tag=1, tagged='2+', default=None),
    ],
)

RESPONSE = Schema(
    'BrokerHeartbeatResponse', '0-2', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('is_caught_up', 'bool', '0+'),
        F('is_fenced', 'bool', '0+', default=True),
        F('should_shut_down', 'bool', '0+'),
    ],
)

API = Api(63, 'BrokerHeartbeat', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

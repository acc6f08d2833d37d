"""SyncGroup (api key 14): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'SyncGroupRequest', '0-5', flexible='4+',
    fields=[
        F('group_id', 'string', '0+'),
        F('generation_id', 'int32', '0+'),
        F('member_id', 'string', '0+'),
        F('group_instance_id', 'string', '3+', nullable='3+', default=None),
        F('protocol_type', 'string', '5+', nullable='5+', default=None, ignorable=True),
        F('protocol_name', 'string', '5+', nullable='5+', default=None, ignorable=True),
        F('assignments', '[]SyncGroupRequestAssignment', '0+', fields=[
            F('member_id', 'string', '0+'),
            F('assignment', 'bytes', '0+'),
        ]),
    ],
)

RESPONSE = Schema(
    'SyncGroupResponse', '0-5', flexible='4+',
    fields=[
        F('throttle_time_ms', 'int32', '1+', ignorable=True),
        F('error_code', 'int16', '0+'),
        F('protocol_type', 'string', '5+', nullable='5+', default=None, ignorable=True),
        F('protocol_name', 'string', '5+', nullable='5+', default=None, ignorable=True),
        F('assignment', 'bytes', '0+'),
    ],
)

API = Api(14, 'SyncGroup', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

"""LeaveGroup (api key 13): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'LeaveGroupRequest', '0-5', flexible='4+',
    fields=[
        F('group_id', 'string', '0+'),
        F('member_id', 'string', '0-2'),
        F('members', '[]MemberIdentity', '3+', fields=[
            F('member_id', 'string', '3+'),
            F('group_instance_id', 'string', '3+', nullable='3+', default=None),
            F('reason', 'string', '5+', nullable='5+', default=None, ignorable=True),
        ]),
    ],
)

RESPONSE = Schema(
    'LeaveGroupResponse', '0-5', flexible='4+',
    fields=[
        F('throttle_time_ms', 'int32', '1+', ignorable=True),
        F('error_code', 'int16', '0+'),
        F('members', '[]MemberResponse', '3+', fields=[
            F('member_id', 'string', '3+'),
            F('group_instance_id', 'string', '3+', nullable='3+'),
            F('error_code', 'int16', '3+'),
        ]),
    ],
)

API = Api(13, 'LeaveGroup', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

"""DescribeGroups (api key 15): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'DescribeGroupsRequest', '0-6', flexible='5+',
    fields=[
        F('groups', '[]string', '0+'),
        F('include_authorized_operations', 'bool', '3+'),
    ],
)

RESPONSE = Schema(
    'DescribeGroupsResponse', '0-6', flexible='5+',
    fields=[
        F('throttle_time_ms', 'int32', '1+', ignorable=True),
        F('groups', '[]DescribedGroup', '0+', fields=[
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '6+', nullable='6+', default=None, ignorable=True),
            F('group_id', 'string', '0+'),
            F('group_state', 'string', '0+'),
            F('protocol_type', 'string', '0+'),
            F('protocol_data', 'string', '0+'),
            F('members', '[]DescribedGroupMember', '0+', fields=[
                F('member_id', 'string', '0+'),
                F('group_instance_id', 'string', '4+', nullable='4+', default=None, ignorable=True),
                F('client_id', 'string', '0+'),
                F('client_host', 'string', '0+'),
                F('member_metadata', 'bytes', '0+'),
                F('member_assignment', 'bytes', '0+'),
            ]),
            F('authorized_operations', 'int32', '3+', default=-2147483648),
        ]),
    ],
)

API = Api(15, 'DescribeGroups', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

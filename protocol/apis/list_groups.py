"""ListGroups (api key 16): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'ListGroupsRequest', '0-5', flexible='3+',
    fields=[
        F('states_filter', '[]string', '4+'),
        F('types_filter', '[]string', '5+'),
    ],
)

RESPONSE = Schema(
    'ListGroupsResponse', '0-5', flexible='3+',
    fields=[
        F('throttle_time_ms', 'int32', '1+', ignorable=True),
        F('error_code', 'int16', '0+'),
        F('groups', '[]ListedGroup', '0+', fields=[
            F('group_id', 'string', '0+'),
            F('protocol_type', 'string', '0+'),
            F('group_state', 'string', '4+', ignorable=True),
            F('group_type', 'string', '5+', ignorable=True),
        ]),
    ],
)

API = Api(16, 'ListGroups', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

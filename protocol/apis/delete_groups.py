"""DeleteGroups (api key 42): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'DeleteGroupsRequest', '0-3', flexible='2+',
    fields=[
        F('groups_names', '[]string', '0+'),
    ],
)

RESPONSE = Schema(
    'DeleteGroupsResponse', '0-3', flexible='2+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('results', '[]DeletableGroupResult', '0+', fields=[
            F('group_id', 'string', '0+'),
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '3+', nullable='3+', default=None, ignorable=True),
        ]),
    ],
)

API = Api(42, 'DeleteGroups', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

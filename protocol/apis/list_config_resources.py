"""ListConfigResources (api key 74): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'ListConfigResourcesRequest', '0-1', flexible='0+',
    fields=[
        F('resource_types', '[]int8', '1+'),
    ],
)

RESPONSE = Schema(
    'ListConfigResourcesResponse', '0-1', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('config_resources', '[]ConfigResource', '0+', fields=[
            F('resource_name', 'string', '0+'),
            F('resource_type', 'int8', '1+', default=16, ignorable=True),
        ]),
    ],
)

API = Api(74, 'ListConfigResources', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

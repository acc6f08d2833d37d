"""IncrementalAlterConfigs (api key 44): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'IncrementalAlterConfigsRequest', '0-1', flexible='1+',
    fields=[
        F('resources', '[]AlterConfigsResource', '0+', fields=[
            F('resource_type', 'int8', '0+'),
            F('resource_name', 'string', '0+'),
            F('configs', '[]AlterableConfig', '0+', fields=[
                F('name', 'string', '0+'),
                F('config_operation', 'int8', '0+'),
                F('value', 'string', '0+', nullable='0+'),
            ]),
        ]),
        F('validate_only', 'bool', '0+'),
    ],
)

RESPONSE = Schema(
    'IncrementalAlterConfigsResponse', '0-1', flexible='1+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('responses', '[]AlterConfigsResourceResponse', '0+', fields=[
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+'),
            F('resource_type', 'int8', '0+'),
            F('resource_name', 'string', '0+'),
        ]),
    ],
)

API = Api(44, 'IncrementalAlterConfigs', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

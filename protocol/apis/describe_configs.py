"""DescribeConfigs (api key 32): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'DescribeConfigsRequest', '0-4', flexible='4+',
    fields=[
        F('resources', '[]DescribeConfigsResource', '0+', fields=[
            F('resource_type', 'int8', '0+'),
            F('resource_name', 'string', '0+'),
            F('configuration_keys', '[]string', '0+', nullable='0+'),
        ]),
        F('include_synonyms', 'bool', '1+'),
        F('include_documentation', 'bool', '3+'),
    ],
)

RESPONSE = Schema(
    'DescribeConfigsResponse', '0-4', flexible='4+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('results', '[]DescribeConfigsResult', '0+', fields=[
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+'),
            F('resource_type', 'int8', '0+'),
            F('resource_name', 'string', '0+'),
            F('configs', '[]DescribeConfigsResourceResult', '0+', fields=[
                F('name', 'string', '0+'),
                F('value', 'string', '0+', nullable='0+'),
                F('read_only', 'bool', '0+'),
                F('is_default', 'bool', '0'),
                F('config_source', 'int8', '1+', default=-1, ignorable=True),
                F('is_sensitive', 'bool', '0+'),
                F('synonyms', '[]DescribeConfigsSynonym', '1+', ignorable=True, fields=[
                    F('name', 'string', '1+'),
                    F('value', 'string', '1+', nullable='0+'),
                    F('source', 'int8', '1+'),
                ]),
                F('config_type', 'int8', '3+', ignorable=True),
                F('documentation', 'string', '3+', nullable='0+', ignorable=True),
            ]),
        ]),
    ],
)

API = Api(32, 'DescribeConfigs', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

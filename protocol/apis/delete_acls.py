"""DeleteAcls (api key 31): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'DeleteAclsRequest', '1-3', flexible='2+',
    fields=[
        F('filters', '[]DeleteAclsFilter', '0+', fields=[
            F('resource_type_filter', 'int8', '0+'),
            F('resource_name_filter', 'string', '0+', nullable='0+'),
            F('pattern_type_filter', 'int8', '1+', default=3),
            F('principal_filter', 'string', '0+', nullable='0+'),
            F('host_filter', 'string', '0+', nullable='0+'),
            F('operation', 'int8', '0+'),
            F('permission_type', 'int8', '0+'),
        ]),
    ],
)

RESPONSE = Schema(
    'DeleteAclsResponse', '1-3', flexible='2+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('filter_results', '[]DeleteAclsFilterResult', '0+', fields=[
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+'),
            F('matching_acls', '[]DeleteAclsMatchingAcl', '0+', fields=[
                F('error_code', 'int16', '0+'),
                F('error_message', 'string', '0+', nullable='0+'),
                F('resource_type', 'int8', '0+'),
                F('resource_name', 'string', '0+'),
                F('pattern_type', 'int8', '1+', default=3),
                F('principal', 'string', '0+'),
                F('host', 'string', '0+'),
                F('operation', 'int8', '0+'),
                F('permission_type', 'int8', '0+'),
            ]),
        ]),
    ],
)

API = Api(31, 'DeleteAcls', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

"""ApiVersions (api key 18): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'ApiVersionsRequest', '0-5', flexible='3+',
    fields=[
        F('client_software_name', 'string', '3+', ignorable=True),
        F('client_software_version', 'string', '3+', ignorable=True),
        F('cluster_id', 'string', '5+', nullable='5+', default=None, ignorable=True),
        F('node_id', 'int32', '5+', default=-1, ignorable=True),
    ],
)

RESPONSE = Schema(
    'ApiVersionsResponse', '0-5', flexible='3+',
    fields=[
        F('error_code', 'int16', '0+'),
        F('api_keys', '[]ApiVersion', '0+', fields=[
            F('api_key', 'int16', '0+'),
            F('min_version', 'int16', '0+'),
            F('max_version', 'int16', '0+'),
        ]),
        F('throttle_time_ms', 'int32', '1+', ignorable=True),
        F('supported_features', '[]SupportedFeatureKey', '3+', tag=0, tagged='3+', ignorable=True, fields=[
            F('name', 'string', '3+'),
            F('min_version', 'int16', '3+'),
            F('max_version', 'int16', '3+'),
        ]),
        F('finalized_features_epoch', 'int64', '3+', tag=1, tagged='3+', default=-1, ignorable=True),
        F('finalized_features', '[]FinalizedFeatureKey', '3+', tag=2, tagged='3+', ignorable=True, fields=[
            F('name', 'string', '3+'),
            F('max_version_level', 'int16', '3+'),
            F('min_version_level', 'int16', '3+'),
        ]),
        F('zk_migration_ready', 'bool', '3+', tag=3, tagged='3+', ignorable=True),
    ],
)

API = Api(18, 'ApiVersions', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

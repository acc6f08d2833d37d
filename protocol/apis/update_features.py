"""UpdateFeatures (api key 57): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'UpdateFeaturesRequest', '0-2', flexible='0+',
    fields=[
        F('timeout_ms', 'int32', '0+', default=60000),
        F('feature_updates', '[]FeatureUpdateKey', '0+', fields=[
            F('feature', 'string', '0+'),
            F('max_version_level', 'int16', '0+'),
            F('allow_downgrade', 'bool', '0'),
            F('upgrade_type', 'int8', '1+', default=1),
        ]),
        F('validate_only', 'bool', '1+'),
    ],
)

RESPONSE = Schema(
    'UpdateFeaturesResponse', '0-2', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
        F('results', '[]UpdatableFeatureResult', '0-1', ignorable=True, fields=[
            F('feature', 'string', '0+'),
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+'),
        ]),
    ],
)

API = Api(57, 'UpdateFeatures', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

"""DescribeClientQuotas (api key 48): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'DescribeClientQuotasRequest', '0-1', flexible='1+',
    fields=[
        F('components', '[]ComponentData', '0+', fields=[
            F('entity_type', 'string', '0+'),
            F('match_type', 'int8', '0+'),
            F('match', 'string', '0+', nullable='0+'),
        ]),
        F('strict', 'bool', '0+'),
    ],
)

RESPONSE = Schema(
    'DescribeClientQuotasResponse', '0-1', flexible='1+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
        F('entries', '[]EntryData', '0+', nullable='0+', fields=[
            F('entity', '[]EntityData', '0+', fields=[
                F('entity_type', 'string', '0+'),
                F('entity_name', 'string', '0+', nullable='0+'),
            ]),
            F('values', '[]ValueData', '0+', fields=[
                F('key', 'string', '0+'),
                F('value', 'float64', '0+'),
            ]),
        ]),
    ],
)

API = Api(48, 'DescribeClientQuotas', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

"""DeleteShareGroupOffsets (api key 92): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'DeleteShareGroupOffsetsRequest', '0', flexible='0+',
    fields=[
        F('group_id', 'string', '0+'),
        F('topics', '[]DeleteShareGroupOffsetsRequestTopic', '0+', fields=[
            F('topic_name', 'string', '0+'),
        ]),
    ],
)

RESPONSE = Schema(
    'DeleteShareGroupOffsetsResponse', '0', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+', default=None),
        F('responses', '[]DeleteShareGroupOffsetsResponseTopic', '0+', fields=[
            F('topic_name', 'string', '0+'),
            F('topic_id', 'uuid', '0+'),
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+', default=None),
        ]),
    ],
)

API = Api(92, 'DeleteShareGroupOffsets', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

"""DeleteTopics (api key 20): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'DeleteTopicsRequest', '0-6', flexible='4+',
    fields=[
        F('topics', '[]DeleteTopicState', '6+', fields=[
            F('name', 'string', '6+', nullable='6+', default=None),
            F('topic_id', 'uuid', '6+'),
        ]),
        F('topic_names', '[]string', '0-5', ignorable=True),
        F('timeout_ms', 'int32', '0+'),
    ],
)

RESPONSE = Schema(
    'DeleteTopicsResponse', '0-6', flexible='4+',
    fields=[
        F('throttle_time_ms', 'int32', '1+', ignorable=True),
        F('responses', '[]DeletableTopicResult', '0+', fields=[
            F('name', 'string', '0+', nullable='6+'),
            F('topic_id', 'uuid', '6+', ignorable=True),
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '5+', nullable='5+', default=None, ignorable=True),
        ]),
    ],
)

API = Api(20, 'DeleteTopics', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

"""InitializeShareGroupState (api key 83): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'InitializeShareGroupStateRequest', '0', flexible='0+',
    fields=[
        F('group_id', 'string', '0+'),
        F('topics', '[]InitializeStateData', '0+', fields=[
            F('topic_id', 'uuid', '0+'),
            F('partitions', '[]PartitionData', '0+', fields=[
                F('partition', 'int32', '0+'),
                F('state_epoch', 'int32', '0+'),
                F('start_offset', 'int64', '0+'),
            ]),
        ]),
    ],
)

RESPONSE = Schema(
    'InitializeShareGroupStateResponse', '0', flexible='0+',
    fields=[
        F('results', '[]InitializeStateResult', '0+', fields=[
            F('topic_id', 'uuid', '0+'),
            F('partitions', '[]PartitionResult', '0+', fields=[
                F('partition', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
                F('error_message', 'string', '0+', nullable='0+', default=None),
            ]),
        ]),
    ],
)

API = Api(83, 'InitializeShareGroupState', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

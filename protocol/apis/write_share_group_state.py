"""WriteShareGroupState (api key 85): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'WriteShareGroupStateRequest', '0-1', flexible='0+',
    fields=[
        F('group_id', 'string', '0+'),
        F('topics', '[]WriteStateData', '0+', fields=[
            F('topic_id', 'uuid', '0+'),
            F('partitions', '[]PartitionData', '0+', fields=[
                F('partition', 'int32', '0+'),
                F('state_epoch', 'int32', '0+'),
                F('leader_epoch', 'int32', '0+'),
                F('start_offset', 'int64', '0+'),
                F('delivery_complete_count', 'int32', '1+', default=-1, ignorable=True),
                F('state_batches', '[]StateBatch', '0+', fields=[
                    F('first_offset', 'int64', '0+'),
                    F('last_offset', 'int64', '0+'),
                    F('delivery_state', 'int8', '0+'),
                    F('delivery_count', 'int16', '0+'),
                ]),
            ]),
        ]),
    ],
)

RESPONSE = Schema(
    'WriteShareGroupStateResponse', '0-1', flexible='0+',
    fields=[
        F('results', '[]WriteStateResult', '0+', fields=[
            F('topic_id', 'uuid', '0+'),
            F('partitions', '[]PartitionResult', '0+', fields=[
                F('partition', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
                F('error_message', 'string', '0+', nullable='0+', default=None),
            ]),
        ]),
    ],
)

API = Api(85, 'WriteShareGroupState', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

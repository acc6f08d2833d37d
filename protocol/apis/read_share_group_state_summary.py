"""ReadShareGroupStateSummary (api key 87): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'ReadShareGroupStateSummaryRequest', '0-1', flexible='0+',
    fields=[
        F('group_id', 'string', '0+'),
        F('topics', '[]ReadStateSummaryData', '0+', fields=[
            F('topic_id', 'uuid', '0+'),
            F('partitions', '[]PartitionData', '0+', fields=[
                F('partition', 'int32', '0+'),
                F('leader_epoch', 'int32', '0+'),
            ]),
        ]),
    ],
)

RESPONSE = Schema(
    'ReadShareGroupStateSummaryResponse', '0-1', flexible='0+',
    fields=[
        F('results', '[]ReadStateSummaryResult', '0+', fields=[
            F('topic_id', 'uuid', '0+'),
            F('partitions', '[]PartitionResult', '0+', fields=[
                F('partition', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
                F('error_message', 'string', '0+', nullable='0+', default=None),
                F('state_epoch', 'int32', '0+'),
                F('leader_epoch', 'int32', '0+'),
                F('start_offset', 'int64', '0+'),
                F('delivery_complete_count', 'int32', '1+', default=-1, ignorable=True),
            ]),
        ]),
    ],
)

API = Api(87, 'ReadShareGroupStateSummary', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

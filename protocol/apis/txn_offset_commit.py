"""TxnOffsetCommit (api key 28): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'TxnOffsetCommitRequest', '0-6', flexible='3+',
    fields=[
        F('transactional_id', 'string', '0+'),
        F('group_id', 'string', '0+'),
        F('producer_id', 'int64', '0+'),
        F('producer_epoch', 'int16', '0+'),
        F('generation_id_or_member_epoch', 'int32', '3+', default=-1),
        F('member_id', 'string', '3+'),
        F('group_instance_id', 'string', '3+', nullable='3+', default=None),
        F('topics', '[]TxnOffsetCommitRequestTopic', '0+', fields=[
            F('name', 'string', '0-5', ignorable=True),
            F('topic_id', 'uuid', '6+', ignorable=True),
            F('partitions', '[]TxnOffsetCommitRequestPartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('committed_offset', 'int64', '0+'),
                F('committed_leader_epoch', 'int32', '2+', default=-1, ignorable=True),
                F('committed_metadata', 'string', '0+', nullable='0+'),
            ]),
        ]),
    ],
)

RESPONSE = Schema(
    'TxnOffsetCommitResponse', '0-6', flexible='3+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('topics', '[]TxnOffsetCommitResponseTopic', '0+', fields=[
            F('name', 'string', '0-5', ignorable=True),
            F('topic_id', 'uuid', '6+', ignorable=True),
            F('partitions', '[]TxnOffsetCommitResponsePartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
            ]),
        ]),
    ],
)

API = Api(28, 'TxnOffsetCommit', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

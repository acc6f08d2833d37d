"""ShareAcknowledge (api key 79): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'ShareAcknowledgeRequest', '1-2', flexible='0+',
    fields=[
        F('group_id', 'string', '0+', nullable='0+', default=None),
        F('member_id', 'string', '0+', nullable='0+'),
        F('share_session_epoch', 'int32', '0+'),
        F('is_renew_ack', 'bool', '2+'),
        F('topics', '[]AcknowledgeTopic', '0+', fields=[
            F('topic_id', 'uuid', '0+'),
            F('partitions', '[]AcknowledgePartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('acknowledgement_batches', '[]AcknowledgementBatch', '0+', fields=[
                    F('first_offset', 'int64', '0+'),
                    F('last_offset', 'int64', '0+'),
                    F('acknowledge_types', '[]int8', '0+'),
                ]),
            ]),
        ]),
    ],
)

RESPONSE = Schema(
    'ShareAcknowledgeResponse', '1-2', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+', default=None),
        F('acquisition_lock_timeout_ms', 'int32', '2+', ignorable=True),
        F('responses', '[]ShareAcknowledgeTopicResponse', '0+', fields=[
            F('topic_id', 'uuid', '0+'),
            F('partitions', '[]PartitionData', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
                F('error_message', 'string', '0+', nullable='0+', default=None),
                F('current_leader', 'LeaderIdAndEpoch', '0+', fields=[
                    F('leader_id', 'int32', '0+'),
                    F('leader_epoch', 'int32', '0+'),
                ]),
            ]),
        ]),
        F('node_endpoints', '[]NodeEndpoint', '0+', fields=[
            F('node_id', 'int32', '0+'),
            F('host', 'string', '0+'),
            F('port', 'int32', '0+'),
            F('rack', 'string', '0+', nullable='0+', default=None),
        ]),
    ],
)

API = Api(79, 'ShareAcknowledge', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

"""ConsumerGroupHeartbeat (api key 68): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'ConsumerGroupHeartbeatRequest', '0-1', flexible='0+',
    fields=[
        F('group_id', 'string', '0+'),
        F('member_id', 'string', '0+'),
        F('member_epoch', 'int32', '0+'),
        F('instance_id', 'string', '0+', nullable='0+', default=None),
        F('rack_id', 'string', '0+', nullable='0+', default=None),
        F('rebalance_timeout_ms', 'int32', '0+', default=-1),
        F('subscribed_topic_names', '[]string', '0+', nullable='0+', default=None),
        F('subscribed_topic_regex', 'string', '1+', nullable='1+', default=None),
        F('server_assignor', 'string', '0+', nullable='0+', default=None),
        F('topic_partitions', '[]TopicPartitions', '0+', nullable='0+', default=None, fields=[
            F('topic_id', 'uuid', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
    ],
)

RESPONSE = Schema(
    'ConsumerGroupHeartbeatResponse', '0-1', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+', default=None),
        F('member_id', 'string', '0+', nullable='0+', default=None),
        F('member_epoch', 'int32', '0+'),
        F('heartbeat_interval_ms', 'int32', '0+'),
        F('assignment', 'Assignment', '0+', nullable='0+', default=None, fields=[
            F('topic_partitions', '[]TopicPartitions', '0+', fields=[
                F('topic_id', 'uuid', '0+'),
                F('partitions', '[]int32', '0+'),
            ]),
        ]),
    ],
)

API = Api(68, 'ConsumerGroupHeartbeat', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

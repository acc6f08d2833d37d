"""Fetch (api key 1): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'FetchRequest', '0-18', flexible='12+',
    fields=[
        F('cluster_id', 'string', '12+', nullable='12+', tag=0, tagged='12+', default=None, ignorable=True),
        F('replica_id', 'int32', '0-14', default=-1),
        F('replica_state', 'ReplicaState', '15+', tag=1, tagged='15+', fields=[
            F('replica_id', 'int32', '15+', default=-1),
            F('replica_epoch', 'int64', '15+', default=-1),
        ]),
        F('max_wait_ms', 'int32', '0+'),
        F('min_bytes', 'int32', '0+'),
        F('max_bytes', 'int32', '3+', default=2147483647, ignorable=True),
        F('isolation_level', 'int8', '4+', ignorable=True),
        F('session_id', 'int32', '7+', ignorable=True),
        F('session_epoch', 'int32', '7+', default=-1, ignorable=True),
        F('topics', '[]FetchTopic', '0+', fields=[
            F('topic', 'string', '0-12', ignorable=True),
            F('topic_id', 'uuid', '13+', ignorable=True),
            F('partitions', '[]FetchPartition', '0+', fields=[
                F('partition', 'int32', '0+'),
                F('current_leader_epoch', 'int32', '9+', default=-1, ignorable=True),
                F('fetch_offset', 'int64', '0+'),
                F('last_fetched_epoch', 'int32', '12+', default=-1),
                F('log_start_offset', 'int64', '5+', default=-1, ignorable=True),
                F('partition_max_bytes', 'int32', '0+'),
                F('replica_directory_id', 'uuid', '17+', tag=0, tagged='17+', ignorable=True),
                F('high_watermark', 'int64', '18+', tag=1, tagged='18+', default=9223372036854775807, ignorable=True),
            ]),
        ]),
        F('forgotten_topics_data', '[]ForgottenTopic', '7+', fields=[
            F('topic', 'string', '7-12', ignorable=True),
            F('topic_id', 'uuid', '13+', ignorable=True),
            F('partitions', '[]int32', '7+'),
        ]),
        F('rack_id', 'string', '11+', ignorable=True),
    ],
)

RESPONSE = Schema(
    'FetchResponse', '0-18', flexible='12+',
    fields=[
        F('throttle_time_ms', 'int32', '1+', ignorable=True),
        F('error_code', 'int16', '7+', ignorable=True),
        F('session_id', 'int32', '7+'),
        F('responses', '[]FetchableTopicResponse', '0+', fields=[
            F('topic', 'string', '0-12', ignorable=True),
            F('topic_id', 'uuid', '13+', ignorable=True),
            F('partitions', '[]PartitionData', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
                F('high_watermark', 'int64', '0+'),
                F('last_stable_offset', 'int64', '4+', default=-1, ignorable=True),
                F('log_start_offset', 'int64', '5+', default=-1, ignorable=True),
                F('diverging_epoch', 'EpochEndOffset', '12+', tag=0, tagged='12+', fields=[
                    F('epoch', 'int32', '12+', default=-1),
                    F('end_offset', 'int64', '12+', default=-1),
                ]),
                F('current_leader', 'LeaderIdAndEpoch', '12+', tag=1, tagged='12+', fields=[
                    F('leader_id', 'int32', '12+', default=-1),
                    F('leader_epoch', 'int32', '12+', default=-1),
                ]),
                F('snapshot_id', 'SnapshotId', '12+', tag=2, tagged='12+', fields=[
                    F('end_offset', 'int64', '0+', default=-1),
                    F('epoch', 'int32', '0+', default=-1),
                ]),
                F('aborted_transactions', '[]AbortedTransaction', '4+', nullable='4+', ignorable=True, fields=[
                    F('producer_id', 'int64', '4+'),
                    F('first_offset', 'int64', '4+'),
                ]),
                F('preferred_read_replica', 'int32', '11+', default=-1),
                F('records', 'records', '0+', nullable='0+'),
            ]),
        ]),
        F('node_endpoints', '[]NodeEndpoint', '16+', tag=0, tagged='16+', fields=[
            F('node_id', 'int32', '16+'),
            F('host', 'string', '16+'),
            F('port', 'int32', '16+'),
            F('rack', 'string', '16+', nullable='16+', default=None),
        ]),
    ],
)

API = Api(1, 'Fetch', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

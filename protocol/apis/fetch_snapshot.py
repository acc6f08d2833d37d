"""FetchSnapshot (api key 59): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'FetchSnapshotRequest', '0-1', flexible='0+',
    fields=[
        F('cluster_id', 'string', '0+', nullable='0+', tag=0, tagged='0+', default=None),
        F('replica_id', 'int32', '0+', default=-1),
        F('max_bytes', 'int32', '0+', default=2147483647),
        F('topics', '[]TopicSnapshot', '0+', fields=[
            F('name', 'string', '0+'),
            F('partitions', '[]PartitionSnapshot', '0+', fields=[
                F('partition', 'int32', '0+'),
                F('current_leader_epoch', 'int32', '0+'),
                F('snapshot_id', 'SnapshotId', '0+', fields=[
                    F('end_offset', 'int64', '0+'),
                    F('epoch', 'int32', '0+'),
                ]),
                F('position', 'int64', '0+'),
                F('replica_directory_id', 'uuid', '1+', tag=0, tagged='1+', ignorable=True),
            ]),
        ]),
    ],
)

RESPONSE = Schema(
    'FetchSnapshotResponse', '0-1', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+', ignorable=True),
        F('error_code', 'int16', '0+'),
        F('topics', '[]TopicSnapshot', '0+', fields=[
            F('name', 'string', '0+'),
            F('partitions', '[]PartitionSnapshot', '0+', fields=[
                F('index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
                F('snapshot_id', 'SnapshotId', '0+', fields=[
                    F('end_offset', 'int64', '0+'),
                    F('epoch', 'int32', '0+'),
                ]),
                F('current_leader', 'LeaderIdAndEpoch', '0+', tag=0, tagged='0+', fields=[
                    F('leader_id', 'int32', '0+'),
                    F('leader_epoch', 'int32', '0+'),
                ]),
                F('size', 'int64', '0+'),
                F('position', 'int64', '0+'),
                F('unaligned_records', 'records', '0+'),
            ]),
        ]),
        F('node_endpoints', '[]NodeEndpoint', '1+', tag=0, tagged='1+', fields=[
            F('node_id', 'int32', '1+'),
            F('host', 'string', '1+'),
            F('port', 'uint16', '1+'),
        ]),
    ],
)

API = Api(59, 'FetchSnapshot', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

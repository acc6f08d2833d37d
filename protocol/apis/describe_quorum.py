"""DescribeQuorum (api key 55): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'DescribeQuorumRequest', '0-2', flexible='0+',
    fields=[
        F('topics', '[]TopicData', '0+', fields=[
            F('topic_name', 'string', '0+'),
            F('partitions', '[]PartitionData', '0+', fields=[
                F('partition_index', 'int32', '0+'),
            ]),
        ]),
    ],
)

RESPONSE = Schema(
    'DescribeQuorumResponse', '0-2', flexible='0+',
    fields=[
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '2+', nullable='2+', ignorable=True),
        F('topics', '[]TopicData', '0+', fields=[
            F('topic_name', 'string', '0+'),
            F('partitions', '[]PartitionData', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
                F('error_message', 'string', '2+', nullable='2+', ignorable=True),
                F('leader_id', 'int32', '0+'),
                F('leader_epoch', 'int32', '0+'),
                F('high_watermark', 'int64', '0+'),
                F('current_voters', '[]ReplicaState', '0+', fields=[
                    F('replica_id', 'int32', '0+'),
                    F('replica_directory_id', 'uuid', '2+'),
                    F('log_end_offset', 'int64', '0+'),
                    F('last_fetch_timestamp', 'int64', '1+', default=-1, ignorable=True),
                    F('last_caught_up_timestamp', 'int64', '1+', default=-1, ignorable=True),
                ]),
                F('observers', '[]ReplicaState', '0+', fields=[
                    F('replica_id', 'int32', '0+'),
                    F('replica_directory_id', 'uuid', '2+'),
                    F('log_end_offset', 'int64', '0+'),
                    F('last_fetch_timestamp', 'int64', '1+', default=-1, ignorable=True),
                    F('last_caught_up_timestamp', 'int64', '1+', default=-1, ignorable=True),
                ]),
            ]),
        ]),
        F('nodes', '[]Node', '2+', fields=[
            F('node_id', 'int32', '2+'),
            F('listeners', '[]Listener', '2+', fields=[
                F('name', 'string', '2+'),
                F('host', 'string', '2+'),
                F('port', 'uint16', '2+'),
            ]),
        ]),
    ],
)

API = Api(55, 'DescribeQuorum', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

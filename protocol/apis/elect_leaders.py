"""ElectLeaders (api key 43): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'ElectLeadersRequest', '0-2', flexible='2+',
    fields=[
        F('election_type', 'int8', '1+'),
        F('topic_partitions', '[]TopicPartitions', '0+', nullable='0+', fields=[
            F('topic', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
        F('timeout_ms', 'int32', '0+', default=60000),
    ],
)

RESPONSE = Schema(
    'ElectLeadersResponse', '0-2', flexible='2+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '1+'),
        F('replica_election_results', '[]ReplicaElectionResult', '0+', fields=[
            F('topic', 'string', '0+'),
            F('partition_result', '[]PartitionResult', '0+', fields=[
                F('partition_id', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
                F('error_message', 'string', '0+', nullable='0+'),
            ]),
        ]),
    ],
)

API = Api(43, 'ElectLeaders', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

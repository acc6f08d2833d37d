"""StreamsGroupHeartbeat (api key 88): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'StreamsGroupHeartbeatRequest', '0-1', flexible='0+',
    fields=[
        F('group_id', 'string', '0+'),
        F('member_id', 'string', '0+'),
        F('member_epoch', 'int32', '0+'),
        F('endpoint_information_epoch', 'int32', '0+'),
        F('instance_id', 'string', '0+', nullable='0+', default=None),
        F('rack_id', 'string', '0+', nullable='0+', default=None),
        F('rebalance_timeout_ms', 'int32', '0+', default=-1),
        F('topology', 'Topology', '0+', nullable='0+', default=None, fields=[
            F('epoch', 'int32', '0+'),
            F('subtopologies', '[]Subtopology', '0+', fields=[
                F('subtopology_id', 'string', '0+'),
                F('source_topics', '[]string', '0+'),
                F('source_topic_regex', '[]string', '0+'),
                F('state_changelog_topics', '[]TopicInfo', '0+', fields=[
                    F('name', 'string', '0+'),
                    F('partitions', 'int32', '0+'),
                    F('replication_factor', 'int16', '0+'),
                    F('topic_configs', '[]KeyValue', '0+', fields=[
                        F('key', 'string', '0+'),
                        F('value', 'string', '0+'),
                    ]),
                ]),
                F('repartition_sink_topics', '[]string', '0+'),
                F('repartition_source_topics', '[]TopicInfo', '0+', fields=[
                    F('name', 'string', '0+'),
                    F('partitions', 'int32', '0+'),
                    F('replication_factor', 'int16', '0+'),
                    F('topic_configs', '[]KeyValue', '0+', fields=[
                        F('key', 'string', '0+'),
                        F('value', 'string', '0+'),
                    ]),
                ]),
                F('copartition_groups', '[]CopartitionGroup', '0+', fields=[
                    F('source_topics', '[]int16', '0+'),
                    F('source_topic_regex', '[]int16', '0+'),
                    F('repartition_source_topics', '[]int16', '0+'),
                ]),
            ]),
        ]),
        F('active_tasks', '[]TaskIds', '0+', nullable='0+', default=None, fields=[
            F('subtopology_id', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
        F('standby_tasks', '[]TaskIds', '0+', nullable='0+', default=None, fields=[
            F('subtopology_id', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
        F('warmup_tasks', '[]TaskIds', '0+', nullable='0+', default=None, fields=[
            F('subtopology_id', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
        F('process_id', 'string', '0+', nullable='0+', default=None),
        F('user_endpoint', 'Endpoint', '0+', nullable='0+', default=None, fields=[
            F('host', 'string', '0+'),
            F('port', 'uint16', '0+'),
        ]),
        F('client_tags', '[]KeyValue', '0+', nullable='0+', default=None, fields=[
            F('key', 'string', '0+'),
            F('value', 'string', '0+'),
        ]),
        F('task_offsets', '[]TaskOffset', '0+', nullable='0+', default=None, fields=[
            F('subtopology_id', 'string', '0+'),
            F('partition', 'int32', '0+'),
            F('offset', 'int64', '0+'),
        ]),
        F('task_end_offsets', '[]TaskOffset', '0+', nullable='0+', default=None, fields=[
            F('subtopology_id', 'string', '0+'),
            F('partition', 'int32', '0+'),
            F('offset', 'int64', '0+'),
        ]),
        F('shutdown_application', 'bool', '0+'),
    ],
)

RESPONSE = Schema(
    'StreamsGroupHeartbeatResponse', '0-1', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+', default=None),
        F('member_id', 'string', '0+'),
        F('member_epoch', 'int32', '0+'),
        F('heartbeat_interval_ms', 'int32', '0+'),
        F('acceptable_recovery_lag_legacy', 'int32', '0'),
        F('task_offset_interval_ms', 'int32', '0+'),
        F('acceptable_recovery_lag', 'int64', '1+', default=-1, ignorable=True),
        F('status', '[]Status', '0+', nullable='0+', fields=[
            F('status_code', 'int8', '0+'),
            F('status_detail', 'string', '0+'),
        ]),
        F('active_tasks', '[]TaskIds', '0+', nullable='0+', default=None, fields=[
            F('subtopology_id', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
        F('standby_tasks', '[]TaskIds', '0+', nullable='0+', default=None, fields=[
            F('subtopology_id', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
        F('warmup_tasks', '[]TaskIds', '0+', nullable='0+', default=None, fields=[
            F('subtopology_id', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
        F('topology_description_required', 'bool', '1+'),
        F('endpoint_information_epoch', 'int32', '0+'),
        F('partitions_by_user_endpoint', '[]EndpointToPartitions', '0+', nullable='0+', default=None, fields=[
            F('user_endpoint', 'Endpoint', '0+', fields=[
                F('host', 'string', '0+'),
                F('port', 'uint16', '0+'),
            ]),
            F('active_partitions', '[]TopicPartition', '0+', fields=[
                F('topic', 'string', '0+'),
                F('partitions', '[]int32', '0+'),
            ]),
            F('standby_partitions', '[]TopicPartition', '0+', fields=[
                F('topic', 'string', '0+'),
                F('partitions', '[]int32', '0+'),
            ]),
        ]),
    ],
)

API = Api(88, 'StreamsGroupHeartbeat', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

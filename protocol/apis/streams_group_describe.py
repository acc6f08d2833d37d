"""StreamsGroupDescribe (api key 89): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'StreamsGroupDescribeRequest', '0-1', flexible='0+',
    fields=[
        F('group_ids', '[]string', '0+'),
        F('include_authorized_operations', 'bool', '0+'),
        F('include_topology_description', 'bool', '1+'),
    ],
)

RESPONSE = Schema(
    'StreamsGroupDescribeResponse', '0-1', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('groups', '[]DescribedGroup', '0+', fields=[
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+', default=None),
            F('group_id', 'string', '0+'),
            F('group_state', 'string', '0+'),
            F('group_epoch', 'int32', '0+'),
            F('assignment_epoch', 'int32', '0+'),
            F('topology', 'Topology', '0+', nullable='0+', default=None, fields=[
                F('epoch', 'int32', '0+'),
                F('subtopologies', '[]Subtopology', '0+', nullable='0+', default=None, fields=[
                    F('subtopology_id', 'string', '0+'),
                    F('source_topics', '[]string', '0+'),
                    F('repartition_sink_topics', '[]string', '0+'),
                    F('state_changelog_topics', '[]TopicInfo', '0+', fields=[
                        F('name', 'string', '0+'),
                        F('partitions', 'int32', '0+'),
                        F('replication_factor', 'int16', '0+'),
                        F('topic_configs', '[]KeyValue', '0+', fields=[
                            F('key', 'string', '0+'),
                            F('value', 'string', '0+'),
                        ]),
                    ]),
                    F('repartition_source_topics', '[]TopicInfo', '0+', fields=[
                        F('name', 'string', '0+'),
                        F('partitions', 'int32', '0+'),
                        F('replication_factor', 'int16', '0+'),
                        F('topic_configs', '[]KeyValue', '0+', fields=[
                            F('key', 'string', '0+'),
                            F('value', 'string', '0+'),
                        ]),
                    ]),
                ]),
            ]),
            F('members', '[]Member', '0+', fields=[
                F('member_id', 'string', '0+'),
                F('member_epoch', 'int32', '0+'),
                F('instance_id', 'string', '0+', nullable='0+', default=None),
                F('rack_id', 'string', '0+', nullable='0+', default=None),
                F('client_id', 'string', '0+'),
                F('client_host', 'string', '0+'),
                F('topology_epoch', 'int32', '0+'),
                F('process_id', 'string', '0+'),
                F('user_endpoint', 'Endpoint', '0+', nullable='0+', default=None, fields=[
                    F('host', 'string', '0+'),
                    F('port', 'uint16', '0+'),
                ]),
                F('client_tags', '[]KeyValue', '0+', fields=[
                    F('key', 'string', '0+'),
                    F('value', 'string', '0+'),
                ]),
                F('task_offsets', '[]TaskOffset', '0+', fields=[
                    F('subtopology_id', 'string', '0+'),
                    F('partition', 'int32', '0+'),
                    F('offset', 'int64', '0+'),
                ]),
                F('task_end_offsets', '[]TaskOffset', '0+', fields=[
                    F('subtopology_id', 'string', '0+'),
                    F('partition', 'int32', '0+'),
                    F('offset', 'int64', '0+'),
                ]),
                F('assignment', 'Assignment', '0+', fields=[
                    F('active_tasks', '[]TaskIds', '0+', fields=[
                        F('subtopology_id', 'string', '0+'),
                        F('partitions', '[]int32', '0+'),
                    ]),
                    F('standby_tasks', '[]TaskIds', '0+', fields=[
                        F('subtopology_id', 'string', '0+'),
                        F('partitions', '[]int32', '0+'),
                    ]),
                    F('warmup_tasks', '[]TaskIds', '0+', fields=[
                        F('subtopology_id', 'string', '0+'),
                        F('partitions', '[]int32', '0+'),
                    ]),
                ]),
                F('target_assignment', 'Assignment', '0+', fields=[
                    F('active_tasks', '[]TaskIds', '0+', fields=[
                        F('subtopology_id', 'string', '0+'),
                        F('partitions', '[]int32', '0+'),
                    ]),
                    F('standby_tasks', '[]TaskIds', '0+', fields=[
                        F('subtopology_id', 'string', '0+'),
                        F('partitions', '[]int32', '0+'),
                    ]),
                    F('warmup_tasks', '[]TaskIds', '0+', fields=[
                        F('subtopology_id', 'string', '0+'),
                        F('partitions', '[]int32', '0+'),
                    ]),
                ]),
                F('is_classic', 'bool', '0+'),
            ]),
            F('authorized_operations', 'int32', '0+', default=-2147483648),
            F('topology_description', 'TopologyDescription', '1+', nullable='1+', default=None, fields=[
                F('subtopologies', '[]TopologyDescriptionSubtopology', '1+', fields=[
                    F('subtopology_id', 'string', '1+'),
                    F('nodes', '[]TopologyDescriptionNode', '1+', fields=[
                        F('name', 'string', '1+'),
                        F('node_type', 'int8', '1+'),
                        F('source_topics', '[]string', '1+'),
                        F('sink_topic', 'string', '1+', nullable='1+', default=None),
                        F('stores', '[]string', '1+'),
                        F('successors', '[]string', '1+'),
                    ]),
                ]),
                F('global_stores', '[]TopologyDescriptionGlobalStore', '1+', fields=[
                    F('source', 'TopologyDescriptionNode', '1+', fields=[
                        F('name', 'string', '1+'),
                        F('node_type', 'int8', '1+'),
                        F('source_topics', '[]string', '1+'),
                        F('sink_topic', 'string', '1+', nullable='1+', default=None),
                        F('stores', '[]string', '1+'),
                        F('successors', '[]string', '1+'),
                    ]),
                    F('processor', 'TopologyDescriptionNode', '1+', fields=[
                        F('name', 'string', '1+'),
                        F('node_type', 'int8', '1+'),
                        F('source_topics', '[]string', '1+'),
                        F('sink_topic', 'string', '1+', nullable='1+', default=None),
                        F('stores', '[]string', '1+'),
                        F('successors', '[]string', '1+'),
                    ]),
                ]),
            ]),
            F('topology_description_status', 'int8', '1+'),
            F('assignor_name', 'string', '1+', nullable='1+', default=None, ignorable=True),
        ]),
    ],
)

API = Api(89, 'StreamsGroupDescribe', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

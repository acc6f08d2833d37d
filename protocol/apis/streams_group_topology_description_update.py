"""StreamsGroupTopologyDescriptionUpdate (api key 93): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'StreamsGroupTopologyDescriptionUpdateRequest', '0', flexible='0+',
    fields=[
        F('group_id', 'string', '0+'),
        F('member_id', 'string', '0+'),
        F('topology_epoch', 'int32', '0+'),
        F('topology_description', 'TopologyDescription', '0+', fields=[
            F('subtopologies', '[]TopologyDescriptionSubtopology', '0+', fields=[
                F('subtopology_id', 'string', '0+'),
                F('nodes', '[]TopologyDescriptionNode', '0+', fields=[
                    F('name', 'string', '0+'),
                    F('node_type', 'int8', '0+'),
                    F('source_topics', '[]string', '0+'),
                    F('sink_topic', 'string', '0+', nullable='0+', default=None),
                    F('stores', '[]string', '0+'),
                    F('successors', '[]string', '0+'),
                ]),
            ]),
            F('global_stores', '[]TopologyDescriptionGlobalStore', '0+', fields=[
                F('source', 'TopologyDescriptionNode', '0+', fields=[
                    F('name', 'string', '0+'),
                    F('node_type', 'int8', '0+'),
                    F('source_topics', '[]string', '0+'),
                    F('sink_topic', 'string', '0+', nullable='0+', default=None),
                    F('stores', '[]string', '0+'),
                    F('successors', '[]string', '0+'),
                ]),
                F('processor', 'TopologyDescriptionNode', '0+', fields=[
                    F('name', 'string', '0+'),
                    F('node_type', 'int8', '0+'),
                    F('source_topics', '[]string', '0+'),
                    F('sink_topic', 'string', '0+', nullable='0+', default=None),
                    F('stores', '[]string', '0+'),
                    F('successors', '[]string', '0+'),
                ]),
            ]),
        ]),
    ],
)

RESPONSE = Schema(
    'StreamsGroupTopologyDescriptionUpdateResponse', '0', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+', default=None),
    ],
)

API = Api(93, 'StreamsGroupTopologyDescriptionUpdate', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

"""DescribeCluster (api key 60): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'DescribeClusterRequest', '0-2', flexible='0+',
    fields=[
        F('include_cluster_authorized_operations', 'bool', '0+'),
        F('endpoint_type', 'int8', '1+', default=1),
        F('include_fenced_brokers', 'bool', '2+'),
    ],
)

RESPONSE = Schema(
    'DescribeClusterResponse', '0-2', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+', default=None),
        F('endpoint_type', 'int8', '1+', default=1),
        F('cluster_id', 'string', '0+'),
        F('controller_id', 'int32', '0+', default=-1),
        F('brokers', '[]DescribeClusterBroker', '0+', fields=[
            F('broker_id', 'int32', '0+'),
            F('host', 'string', '0+'),
            F('port', 'int32', '0+'),
            F('rack', 'string', '0+', nullable='0+', default=None),
            F('is_fenced', 'bool', '2+'),
        ]),
        F('cluster_authorized_operations', 'int32', '0+', default=-2147483648),
    ],
)

API = Api(60, 'DescribeCluster', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

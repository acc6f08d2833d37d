"""DescribeLogDirs (api key 35): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'DescribeLogDirsRequest', '0-5', flexible='2+',
    fields=[
        F('topics', '[]DescribableLogDirTopic', '0+', nullable='0+', fields=[
            F('topic', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
    ],
)

RESPONSE = Schema(
    'DescribeLogDirsResponse', '0-5', flexible='2+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '3+', ignorable=True),
        F('results', '[]DescribeLogDirsResult', '0+', fields=[
            F('error_code', 'int16', '0+'),
            F('log_dir', 'string', '0+'),
            F('topics', '[]DescribeLogDirsTopic', '0+', fields=[
                F('name', 'string', '0+'),
                F('partitions', '[]DescribeLogDirsPartition', '0+', fields=[
                    F('partition_index', 'int32', '0+'),
                    F('partition_size', 'int64', '0+'),
                    F('offset_lag', 'int64', '0+'),
                    F('is_future_key', 'bool', '0+'),
                ]),
            ]),
            F('total_bytes', 'int64', '4+', default=-1, ignorable=True),
            F('usable_bytes', 'int64', '4+', default=-1, ignorable=True),
            F('is_cordoned', 'bool', '5+', ignorable=True),
        ]),
    ],
)

API = Api(35, 'DescribeLogDirs', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

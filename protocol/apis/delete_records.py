"""DeleteRecords (api key 21): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'DeleteRecordsRequest', '0-2', flexible='2+',
    fields=[
        F('topics', '[]DeleteRecordsTopic', '0+', fields=[
            F('name', 'string', '0+'),
            F('partitions', '[]DeleteRecordsPartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('offset', 'int64', '0+'),
            ]),
        ]),
        F('timeout_ms', 'int32', '0+'),
    ],
)

RESPONSE = Schema(
    'DeleteRecordsResponse', '0-2', flexible='2+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('topics', '[]DeleteRecordsTopicResult', '0+', fields=[
            F('name', 'string', '0+'),
            F('partitions', '[]DeleteRecordsPartitionResult', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('low_watermark', 'int64', '0+'),
                F('error_code', 'int16', '0+'),
            ]),
        ]),
    ],
)

API = Api(21, 'DeleteRecords', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

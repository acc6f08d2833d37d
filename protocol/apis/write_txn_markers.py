"""WriteTxnMarkers (api key 27): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'WriteTxnMarkersRequest', '1-2', flexible='1+',
    fields=[
        F('markers', '[]WritableTxnMarker', '0+', fields=[
            F('producer_id', 'int64', '0+'),
            F('producer_epoch', 'int16', '0+'),
            F('transaction_result', 'bool', '0+'),
            F('topics', '[]WritableTxnMarkerTopic', '0+', fields=[
                F('name', 'string', '0+'),
                F('partition_indexes', '[]int32', '0+'),
            ]),
            F('coordinator_epoch', 'int32', '0+'),
            F('transaction_version', 'int8', '2+', ignorable=True),
        ]),
    ],
)

RESPONSE = Schema(
    'WriteTxnMarkersResponse', '1-2', flexible='1+',
    fields=[
        F('markers', '[]WritableTxnMarkerResult', '0+', fields=[
            F('producer_id', 'int64', '0+'),
            F('topics', '[]WritableTxnMarkerTopicResult', '0+', fields=[
                F('name', 'string', '0+'),
                F('partitions', '[]WritableTxnMarkerPartitionResult', '0+', fields=[
                    F('partition_index', 'int32', '0+'),
                    F('error_code', 'int16', '0+'),
                ]),
            ]),
        ]),
    ],
)

API = Api(27, 'WriteTxnMarkers', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi

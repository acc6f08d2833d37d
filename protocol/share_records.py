"""Share-coordinator records (__share_group_state, KIP-932): schema data generated from
Kafka's definitions by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import F, Schema, message_classes

SHARE_SNAPSHOT_KEY = Schema(
    'ShareSnapshotKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
        F('topic_id', 'uuid', '0'),
        F('partition', 'int32', '0'),
    ],
)

SHARE_SNAPSHOT_VALUE = Schema(
    'ShareSnapshotValue', '0', flexible='0+',
    fields=[
        F('snapshot_epoch', 'int32', '0+'),
        F('state_epoch', 'int32', '0+'),
        F('leader_epoch', 'int32', '0+'),
        F('start_offset', 'int64', '0+'),
        F('delivery_complete_count', 'int32', '0+', tag=0, tagged='0+', default=-1),
        F('create_timestamp', 'int64', '0+'),
        F('write_timestamp', 'int64', '0+'),
        F('state_batches', '[]StateBatch', '0+', fields=[
            F('first_offset', 'int64', '0+'),
            F('last_offset', 'int64', '0+'),
            F('delivery_state', 'int8', '0+'),
            F('delivery_count', 'int16', '0+'),
        ]),
    ],
)

SHARE_UPDATE_KEY = Schema(
    'ShareUpdateKey', '0', flexible='none',
    fields=[
        F('group_id', 'string', '0'),
        F('topic_id', 'uuid', '0'),
        F('partition', 'int32', '0'),
    ],
)

SHARE_UPDATE_VALUE = Schema(
    'ShareUpdateValue', '0', flexible='0+',
    fields=[
        F('snapshot_epoch', 'int32', '0+'),
        F('leader_epoch', 'int32', '0+'),
        F('start_offset', 'int64', '0+'),
        F('delivery_complete_count', 'int32', '0+', tag=0, tagged='0+', default=-1),
        F('state_batches', '[]StateBatch', '0+', fields=[
            F('first_offset', 'int64', '0+'),
            F('last_offset', 'int64', '0+'),
            F('delivery_state', 'int8', '0+'),
            F('delivery_count', 'int16', '0+'),
        ]),
    ],
)

__getattr__ = message_classes(SHARE_SNAPSHOT_KEY, SHARE_SNAPSHOT_VALUE, SHARE_UPDATE_KEY, SHARE_UPDATE_VALUE)

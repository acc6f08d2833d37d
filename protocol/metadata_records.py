"""KRaft metadata records (__cluster_metadata): schema data generated from Kafka's
common/metadata definitions by tools/gen_schemas.py. Edit the generator, not this file.
BY_API_KEY maps the api key a record is framed with to its schema (Kafka: MetadataRecordType)."""

from minibroker_protocol.schema import F, Message, Schema, message_classes

REGISTER_BROKER_RECORD = Schema(
    'RegisterBrokerRecord', '0-4', flexible='0+',
    fields=[
        F('broker_id', 'int32', '0+'),
        F('is_migrating_zk_broker', 'bool', '2+'),
        F('incarnation_id', 'uuid', '0+'),
        F('broker_epoch', 'int64', '0+'),
        F('end_points', '[]BrokerEndpoint', '0+', fields=[
            F('name', 'string', '0+'),
            F('host', 'string', '0+'),
            F('port', 'uint16', '0+'),
            F('security_protocol', 'int16', '0+'),
        ]),
        F('features', '[]BrokerFeature', '0+', fields=[
            F('name', 'string', '0+'),
            F('min_supported_version', 'int16', '0+'),
            F('max_supported_version', 'int16', '0+'),
        ]),
        F('rack', 'string', '0+', nullable='0+'),
        F('fenced', 'bool', '0+', default=True),
        F('in_controlled_shutdown', 'bool', '1+'),
        F('log_dirs', '[]uuid', '3+', tag=0, tagged='3+'),
        F('cordoned_log_dirs', '[]uuid', '4+', nullable='4+', tag=1, tagged='4+', default=None),
    ],
)

UNREGISTER_BROKER_RECORD = Schema(
    'UnregisterBrokerRecord', '0', flexible='0+',
    fields=[
        F('broker_id', 'int32', '0+'),
        F('broker_epoch', 'int64', '0+'),
    ],
)

TOPIC_RECORD = Schema(
    'TopicRecord', '0', flexible='0+',
    fields=[
        F('name', 'string', '0+'),
        F('topic_id', 'uuid', '0+'),
    ],
)

PARTITION_RECORD = Schema(
    'PartitionRecord', '0-2', flexible='0+',
    fields=[
        F('partition_id', 'int32', '0+', default=-1),
        F('topic_id', 'uuid', '0+'),
        F('replicas', '[]int32', '0+'),
        F('isr', '[]int32', '0+'),
        F('removing_replicas', '[]int32', '0+'),
        F('adding_replicas', '[]int32', '0+'),
        F('leader', 'int32', '0+', default=-1),
        F('leader_recovery_state', 'int8', '0+', tag=0, tagged='0+'),
        F('leader_epoch', 'int32', '0+', default=-1),
        F('partition_epoch', 'int32', '0+', default=-1),
        F('directories', '[]uuid', '1+'),
        F('eligible_leader_replicas', '[]int32', '2+', nullable='2+', tag=1, tagged='2+', default=None),
        F('last_known_elr', '[]int32', '2+', nullable='2+', tag=2, tagged='2+', default=None),
    ],
)

CONFIG_RECORD = Schema(
    'ConfigRecord', '0', flexible='0+',
    fields=[
        F('resource_type', 'int8', '0+'),
        F('resource_name', 'string', '0+'),
        F('name', 'string', '0+'),
        F('value', 'string', '0+', nullable='0+'),
    ],
)

PARTITION_CHANGE_RECORD = Schema(
    'PartitionChangeRecord', '0-2', flexible='0+',
    fields=[
        F('partition_id', 'int32', '0+', default=-1),
        F('topic_id', 'uuid', '0+'),
        F('isr', '[]int32', '0+', nullable='0+', tag=0, tagged='0+', default=None),
        F('leader', 'int32', '0+', tag=1, tagged='0+', default=-2),
        F('replicas', '[]int32', '0+', nullable='0+', tag=2, tagged='0+', default=None),
        F('removing_replicas', '[]int32', '0+', nullable='0+', tag=3, tagged='0+', default=None),
        F('adding_replicas', '[]int32', '0+', nullable='0+', tag=4, tagged='0+', default=None),
        F('leader_recovery_state', 'int8', '0+', tag=5, tagged='0+', default=-1),
        F('directories', '[]uuid', '1+', nullable='1+', tag=8, tagged='1+', default=None),
        F('eligible_leader_replicas', '[]int32', '2+', nullable='2+', tag=6, tagged='2+', default=None),
        F('last_known_elr', '[]int32', '2+', nullable='2+', tag=7, tagged='2+', default=None),
    ],
)

FENCE_BROKER_RECORD = Schema(
    'FenceBrokerRecord', '0', flexible='0+',
    fields=[
        F('id', 'int32', '0+'),
        F('epoch', 'int64', '0+'),
    ],
)

UNFENCE_BROKER_RECORD = Schema(
    'UnfenceBrokerRecord', '0', flexible='0+',
    fields=[
        F('id', 'int32', '0+'),
        F('epoch', 'int64', '0+'),
    ],
)

REMOVE_TOPIC_RECORD = Schema(
    'RemoveTopicRecord', '0', flexible='0+',
    fields=[
        F('topic_id', 'uuid', '0+'),
    ],
)

DELEGATION_TOKEN_RECORD = Schema(
    'DelegationTokenRecord', '0', flexible='0+',
    fields=[
        F('owner', 'string', '0+'),
        F('requester', 'string', '0+'),
        F('renewers', '[]string', '0+'),
        F('issue_timestamp', 'int64', '0+'),
        F('max_timestamp', 'int64', '0+'),
        F('expiration_timestamp', 'int64', '0+'),
        F('token_id', 'string', '0+'),
    ],
)

USER_SCRAM_CREDENTIAL_RECORD = Schema(
    'UserScramCredentialRecord', '0', flexible='0+',
    fields=[
        F('name', 'string', '0+'),
        F('mechanism', 'int8', '0+'),
        F('salt', 'bytes', '0+'),
        F('stored_key', 'bytes', '0+'),
        F('server_key', 'bytes', '0+'),
        F('iterations', 'int32', '0+'),
    ],
)

FEATURE_LEVEL_RECORD = Schema(
    'FeatureLevelRecord', '0', flexible='0+',
    fields=[
        F('name', 'string', '0+'),
        F('feature_level', 'int16', '0+'),
    ],
)

CLIENT_QUOTA_RECORD = Schema(
    'ClientQuotaRecord', '0', flexible='0+',
    fields=[
        F('entity', '[]EntityData', '0+', fields=[
            F('entity_type', 'string', '0+'),
            F('entity_name', 'string', '0+', nullable='0+'),
        ]),
        F('key', 'string', '0+'),
        F('value', 'float64', '0+'),
        F('remove', 'bool', '0+'),
    ],
)

PRODUCER_IDS_RECORD = Schema(
    'ProducerIdsRecord', '0', flexible='0+',
    fields=[
        F('broker_id', 'int32', '0+'),
        F('broker_epoch', 'int64', '0+', default=-1),
        F('next_producer_id', 'int64', '0+'),
    ],
)

BROKER_REGISTRATION_CHANGE_RECORD = Schema(
    'BrokerRegistrationChangeRecord', '0-3', flexible='0+',
    fields=[
        F('broker_id', 'int32', '0+'),
        F('broker_epoch', 'int64', '0+'),
        F('fenced', 'int8', '0+', tag=0, tagged='0+'),
        F('in_controlled_shutdown', 'int8', '1+', tag=1, tagged='1+'),
        F('log_dirs', '[]uuid', '2+', tag=2, tagged='2+'),
        F('cordoned_log_dirs', '[]uuid', '3+', nullable='3+', tag=3, tagged='3+', default=None),
    ],
)

ACCESS_CONTROL_ENTRY_RECORD = Schema(
    'AccessControlEntryRecord', '0', flexible='0+',
    fields=[
        F('id', 'uuid', '0+'),
        F('resource_type', 'int8', '0+'),
        F('resource_name', 'string', '0+'),
        F('pattern_type', 'int8', '0+'),
        F('principal', 'string', '0+'),
        F('host', 'string', '0+'),
        F('operation', 'int8', '0+'),
        F('permission_type', 'int8', '0+'),
    ],
)

REMOVE_ACCESS_CONTROL_ENTRY_RECORD = Schema(
    'RemoveAccessControlEntryRecord', '0', flexible='0+',
    fields=[
        F('id', 'uuid', '0+'),
    ],
)

NO_OP_RECORD = Schema(
    'NoOpRecord', '0', flexible='0+',
    fields=[
    ],
)

ZK_MIGRATION_STATE_RECORD = Schema(
    'ZkMigrationStateRecord', '0', flexible='0+',
    fields=[
        F('zk_migration_state', 'int8', '0+'),
    ],
)

REMOVE_USER_SCRAM_CREDENTIAL_RECORD = Schema(
    'RemoveUserScramCredentialRecord', '0', flexible='0+',
    fields=[
        F('name', 'string', '0+'),
        F('mechanism', 'int8', '0+'),
    ],
)

BEGIN_TRANSACTION_RECORD = Schema(
    'BeginTransactionRecord', '0', flexible='0+',
    fields=[
        F('name', 'string', '0+', nullable='0+', tag=0, tagged='0+', default=None),
    ],
)

END_TRANSACTION_RECORD = Schema(
    'EndTransactionRecord', '0', flexible='0+',
    fields=[
    ],
)

ABORT_TRANSACTION_RECORD = Schema(
    'AbortTransactionRecord', '0', flexible='0+',
    fields=[
        F('reason', 'string', '0+', nullable='0+', tag=0, tagged='0+', default=None),
    ],
)

REMOVE_DELEGATION_TOKEN_RECORD = Schema(
    'RemoveDelegationTokenRecord', '0', flexible='0+',
    fields=[
        F('token_id', 'string', '0+'),
    ],
)

REGISTER_CONTROLLER_RECORD = Schema(
    'RegisterControllerRecord', '0', flexible='0+',
    fields=[
        F('controller_id', 'int32', '0+'),
        F('incarnation_id', 'uuid', '0+'),
        F('zk_migration_ready', 'bool', '0+'),
        F('end_points', '[]ControllerEndpoint', '0+', fields=[
            F('name', 'string', '0+'),
            F('host', 'string', '0+'),
            F('port', 'uint16', '0+'),
            F('security_protocol', 'int16', '0+'),
        ]),
        F('features', '[]ControllerFeature', '0+', fields=[
            F('name', 'string', '0+'),
            F('min_supported_version', 'int16', '0+'),
            F('max_supported_version', 'int16', '0+'),
        ]),
    ],
)

CLEAR_ELR_RECORD = Schema(
    'ClearElrRecord', '0', flexible='0+',
    fields=[
        F('topic_name', 'string', '0+'),
    ],
)

UNREGISTER_CONTROLLER_RECORD = Schema(
    'UnregisterControllerRecord', '0', flexible='0+',
    fields=[
        F('controller_id', 'int32', '0+'),
    ],
)

BY_API_KEY: dict[int, Schema[Message]] = {
    0: REGISTER_BROKER_RECORD,
    1: UNREGISTER_BROKER_RECORD,
    2: TOPIC_RECORD,
    3: PARTITION_RECORD,
    4: CONFIG_RECORD,
    5: PARTITION_CHANGE_RECORD,
    7: FENCE_BROKER_RECORD,
    8: UNFENCE_BROKER_RECORD,
    9: REMOVE_TOPIC_RECORD,
    10: DELEGATION_TOKEN_RECORD,
    11: USER_SCRAM_CREDENTIAL_RECORD,
    12: FEATURE_LEVEL_RECORD,
    14: CLIENT_QUOTA_RECORD,
    15: PRODUCER_IDS_RECORD,
    17: BROKER_REGISTRATION_CHANGE_RECORD,
    18: ACCESS_CONTROL_ENTRY_RECORD,
    19: REMOVE_ACCESS_CONTROL_ENTRY_RECORD,
    20: NO_OP_RECORD,
    21: ZK_MIGRATION_STATE_RECORD,
    22: REMOVE_USER_SCRAM_CREDENTIAL_RECORD,
    23: BEGIN_TRANSACTION_RECORD,
    24: END_TRANSACTION_RECORD,
    25: ABORT_TRANSACTION_RECORD,
    26: REMOVE_DELEGATION_TOKEN_RECORD,
    27: REGISTER_CONTROLLER_RECORD,
    28: CLEAR_ELR_RECORD,
    29: UNREGISTER_CONTROLLER_RECORD,
}
__getattr__ = message_classes(REGISTER_BROKER_RECORD, UNREGISTER_BROKER_RECORD, TOPIC_RECORD, PARTITION_RECORD, CONFIG_RECORD, PARTITION_CHANGE_RECORD, FENCE_BROKER_RECORD, UNFENCE_BROKER_RECORD, REMOVE_TOPIC_RECORD, DELEGATION_TOKEN_RECORD, USER_SCRAM_CREDENTIAL_RECORD, FEATURE_LEVEL_RECORD, CLIENT_QUOTA_RECORD, PRODUCER_IDS_RECORD, BROKER_REGISTRATION_CHANGE_RECORD, ACCESS_CONTROL_ENTRY_RECORD, REMOVE_ACCESS_CONTROL_ENTRY_RECORD, NO_OP_RECORD, ZK_MIGRATION_STATE_RECORD, REMOVE_USER_SCRAM_CREDENTIAL_RECORD, BEGIN_TRANSACTION_RECORD, END_TRANSACTION_RECORD, ABORT_TRANSACTION_RECORD, REMOVE_DELEGATION_TOKEN_RECORD, REGISTER_CONTROLLER_RECORD, CLEAR_ELR_RECORD, UNREGISTER_CONTROLLER_RECORD)

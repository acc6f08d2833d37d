"""KRaft control record values (LeaderChange, snapshot header/footer, KRaftVersion, Voters): schema
data generated from Kafka's definitions by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import F, Schema, message_classes

LEADER_CHANGE_MESSAGE = Schema(
    'LeaderChangeMessage', '0-1', flexible='0+',
    fields=[
        F('version', 'int16', '0+'),
        F('leader_id', 'int32', '0+'),
        F('voters', '[]Voter', '0+', fields=[
            F('voter_id', 'int32', '0+'),
            F('voter_directory_id', 'uuid', '1+'),
        ]),
        F('granting_voters', '[]Voter', '0+', fields=[
            F('voter_id', 'int32', '0+'),
            F('voter_directory_id', 'uuid', '1+'),
        ]),
    ],
)

SNAPSHOT_HEADER_RECORD = Schema(
    'SnapshotHeaderRecord', '0', flexible='0+',
    fields=[
        F('version', 'int16', '0+'),
        F('last_contained_log_timestamp', 'int64', '0+'),
    ],
)

SNAPSHOT_FOOTER_RECORD = Schema(
    'SnapshotFooterRecord', '0', flexible='0+',
    fields=[
        F('version', 'int16', '0+'),
    ],
)

K_RAFT_VERSION_RECORD = Schema(
    'KRaftVersionRecord', '0', flexible='0+',
    fields=[
        F('version', 'int16', '0+'),
        F('k_raft_version', 'int16', '0+'),
    ],
)

VOTERS_RECORD = Schema(
    'VotersRecord', '0', flexible='0+',
    fields=[
        F('version', 'int16', '0+'),
        F('voters', '[]Voter', '0+', fields=[
            F('voter_id', 'int32', '0+'),
            F('voter_directory_id', 'uuid', '0+'),
            F('endpoints', '[]Endpoint', '0+', fields=[
                F('name', 'string', '0+'),
                F('host', 'string', '0+'),
                F('port', 'uint16', '0+'),
            ]),
            F('k_raft_version_feature', 'KRaftVersionFeature', '0+', fields=[
                F('min_supported_version', 'int16', '0+'),
                F('max_supported_version', 'int16', '0+'),
            ]),
        ]),
    ],
)

__getattr__ = message_classes(LEADER_CHANGE_MESSAGE, SNAPSHOT_HEADER_RECORD, SNAPSHOT_FOOTER_RECORD, K_RAFT_VERSION_RECORD, VOTERS_RECORD)

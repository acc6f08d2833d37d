"""KRaft's log layer, for one voter: the metadata log `__cluster_metadata-0` (metadata_log.py),
its snapshots (snapshots.py) and the quorum-state file (quorum_state.py), in Kafka's formats so
that Kafka's kafka-dump-log and kafka-metadata-shell read them (Kafka: the raft module's
KafkaMetadataLog, FileRawSnapshotWriter/RecordsSnapshotWriter, FileQuorumStateStore). A quorum of
several voters (Vote, BeginQuorumEpoch, EndQuorumEpoch) is out of scope (issue 29)."""

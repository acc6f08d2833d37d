"""The KRaft controller, one voter (Kafka: QuorumController and its managers; issue 29).

`quorum_controller.QuorumController` owns the metadata log (minibroker.raft) and serializes every
request into records: `cluster_control` (broker registrations, heartbeats, fencing, controlled
shutdown), `replication_control` (topics, partitions, ISR changes, leader election with
`partition_change` and replica placement with `replica_placer`), `producer_id_control` and
`feature_control`. Its state is a MetadataImage (minibroker.metadata.image) it replays every
record it writes into, as the brokers replay what they fetch. Nothing here is imported by a
broker that is not a controller (start-up stays lean: tests/test_startup_imports.py).
"""

"""The coordinators: state machines over the partitions of the broker's internal topics (Kafka's
group-coordinator, share-coordinator and transaction-coordinator modules over its
CoordinatorRuntime). Each is built by `minibroker.coordinators.Coordinators` from what it uses
(the topic registry, the replica manager, a clock); none of them sees the broker.

- runtime/: what the three share. `CoordinatorPartitionWriter` (the one path from a coordinator to
  `ReplicaManager.append`), `CoordinatorLoader` (replays a partition's log), `CoordinatorStore` (one
  internal topic: created on first use, key -> partition, append, load), `CoordinatorRuntime` (the
  stores, and the leadership hooks `on_election` / `on_resignation` that load and unload a
  partition's state in its coordinator as ReplicaManager.apply_delta moves its leadership:
  minibroker.coordinator_elections) and `KeyedTimer`.
- group/: __consumer_offsets. `GroupCoordinator` (the façade the handlers call) over
  `GroupMetadataManager` (classic groups: sync, heartbeat, leave, sessions) with `ClassicGroupJoin`
  (JoinGroup and rebalances), `ConsumerGroupManager` (KIP-848 consumer groups) with
  `TargetAssignmentBuilder` (subscriptions, target assignment) and its request checks
  (`consumer_group_validation.py`) and records (`consumer_group_replay.py`), `GroupMigration`
  (between the two protocols), `OffsetMetadataManager` (commits, transactional commits, fetch,
  delete, expiry); the record codecs (`records.py`, `consumer_group_records.py`), assignors,
  `GroupConfig` and the GROUP config resources (`ConsumerGroupConfigs`).
- share/: KIP-932. `ShareGroupCoordinator` (groups, members, sessions, acquisition), `SharePartition`
  (one partition's in-flight records), `ShareCoordinatorShard` (their state in __share_group_state).
- txn/: __transaction_state. `TransactionCoordinator`, `TransactionMarkerChannelManager` (the
  markers, then the Complete* state), `TransactionMetadata`, the record codec (`transaction_log.py`)
  `TxnMarkerSender` (WriteTxnMarkers to other brokers' partitions) and `ProducerIdManager`.
"""

"""Coordinators: the group coordinator (classic protocol), the transaction coordinator, and the
stores they keep their records in. Each is built by `Broker` start-up from what it uses (the
topic registry, the replica manager, a clock); none of them sees the broker.

- group.py: one classic group's state and membership (Kafka's ClassicGroup / ClassicGroupMember).
- group_coordinator.py: the façade the handlers call; lifecycle, loading, group deletion and expiry.
- group_membership.py: join, sync, heartbeat, leave, rebalances and member sessions.
- group_offsets.py: commit, transactional commit, fetch and delete of offsets.
- group_responses.py: the JoinGroup / SyncGroup / DescribeGroups / LeaveGroup answers.
- records.py: the __consumer_offsets record keys and values, and the group -> partition mapping.
- offsets_store.py: writing those records through the replica manager and reading them back.
- transaction_*.py: the transaction coordinator, its metadata, __transaction_state and producer ids.
"""

"""Coordinators: the group coordinator (classic protocol) and the store they share.

- group.py: one classic group's state and membership (Kafka's ClassicGroup / ClassicGroupMember).
- group_coordinator.py: the operations (join, sync, heartbeat, leave, commit, fetch, ...) and timers.
- records.py: the __consumer_offsets record keys and values, and the group -> partition mapping.
- offsets_store.py: writing those records through the storage engine and reading them back.
"""

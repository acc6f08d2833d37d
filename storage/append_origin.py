"""Who is appending to a log (Kafka: AppendOrigin), in a module of its own so that code which only
names an origin (minibroker.replica_manager's defaults) does not import the append path with it
(minibroker_storage.log, minibroker_storage.producer_state: issue 22). minibroker_storage.log and minibroker_storage.producer_state re-export it."""

from __future__ import annotations


class AppendOrigin:
    """Who is appending, which decides how much is checked (Kafka: AppendOrigin)."""

    CLIENT = "client"  # a Produce request: sequences and epochs, no control batches
    COORDINATOR = "coordinator"  # the group/transaction coordinators: epochs only
    REPLICATION = "replication"  # loading and recovery: nothing is checked
    RAFT_LEADER = "raft_leader"  # the KRaft leader appending to __cluster_metadata (control batches allowed)

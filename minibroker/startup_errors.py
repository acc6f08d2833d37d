"""The start-up errors said in one line with exit status 2 (issue 31), for every entry point that
starts nodes: `python -m minibroker` (minibroker.cli) and `python -m minibroker cluster`
(minibroker.cluster_launcher). In a module of its own so the launcher does not import the CLI
(which imports the KRaft node, which imports the cluster's fault kinds, which use the launcher).
"""

from __future__ import annotations

from minibroker.config import ConfigError
from minibroker.network.socket_server import ListenerBindError
from storage.file_lock import LogDirFailure
from storage.meta_properties import MetaPropertiesError

# their messages name the key, listener or path; MetaPropertiesError: a data dir of another node
# or cluster (Kafka's MetaPropertiesEnsemble message)
STARTUP_ERRORS: tuple[type[Exception], ...] = (ConfigError, ListenerBindError, LogDirFailure, MetaPropertiesError)
EXIT_STARTUP_ERROR = 2  # as argparse's usage errors

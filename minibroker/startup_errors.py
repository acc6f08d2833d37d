"""The start-up errors said in one line with exit status 2, shared by `python -m minibroker`
(minibroker.cli) and `python -m minibroker cluster` (minibroker.cluster_launcher): an invalid
config value, a listener that cannot bind, an unusable data dir, a data dir of another node or
cluster (Kafka's kafka-server-start exits non-zero after "Exiting Kafka due to fatal exception")."""

from __future__ import annotations

from minibroker.config import ConfigError
from minibroker.metadata.broker_lifecycle_manager import RegistrationRefused
from minibroker.network.socket_server import ListenerBindError
from minibroker_storage.file_lock import LogDirFailure
from minibroker_storage.meta_properties import MetaPropertiesError

# MetaPropertiesError: a data dir of another node or cluster (Kafka's MetaPropertiesEnsemble message);
# RegistrationRefused: the controller answered BrokerRegistration with INCONSISTENT_CLUSTER_ID
STARTUP_ERRORS: tuple[type[Exception], ...] = (ConfigError, ListenerBindError, LogDirFailure, MetaPropertiesError,
                                               RegistrationRefused)
EXIT_STARTUP_ERROR = 2  # as argparse's usage errors

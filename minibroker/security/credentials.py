"""SCRAM credentials: user -> mechanism -> salt, StoredKey, ServerKey, iterations (never the password).

Kafka keeps them as UserScramCredentialRecords in its metadata log; we keep one JSON file in the
data directory, `scram-credentials.json` (mode 0600), rewritten whole on each change (write to a
temporary file, fsync, rename), so a crash leaves the old or the new set, never half of one.
Describe/AlterUserScramCredentials read and change it (handlers/security.py); the SCRAM
mechanism looks users up in it (scram.py).
"""

from __future__ import annotations

import base64
import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # scram.py (hashlib, hmac, secrets) is imported when credentials are read or altered, not by a
    # broker starting without any (issue 22)
    from minibroker.security.delegation_tokens import DelegationTokenCache
    from minibroker.security.scram import ScramCredential

log = logging.getLogger("minibroker.security")

FILE_NAME = "scram-credentials.json"


class ScramCredentialStore:
    def __init__(self, data_dir: Path):
        self.path = Path(data_dir) / FILE_NAME
        self._users: dict[str, dict[str, ScramCredential]] = {}
        self.persist = True  # False in KRaft mode: the metadata log holds them
        # delegation tokens' credentials, looked up by SCRAM with tokenauth=true (Kafka's
        # CredentialProvider holds both caches); None when delegation.token.secret.key is unset
        self.token_cache: DelegationTokenCache | None = None

    def use_metadata_log(self) -> bool:
        """KRaft mode: credentials come from the metadata log (`set_credentials`), nothing is
        written here; whether the file held credentials that are now ignored."""
        had = bool(self._users)
        self.persist = False
        self._users = {}
        return had

    def set_credentials(self, credentials: Iterable[tuple[str, str, ScramCredential]]) -> None:
        """The whole set (user, mechanism, credential), as the metadata image holds it."""
        users: dict[str, dict[str, ScramCredential]] = {}
        for user, mechanism, credential in credentials:
            users.setdefault(user, {})[mechanism] = credential
        self._users = users

    def load(self) -> None:
        try:
            raw = json.loads(self.path.read_text())
        except FileNotFoundError:
            return
        from minibroker.security.scram import ScramCredential  # lazy: hashlib/hmac with the first credential

        users: dict[str, dict[str, ScramCredential]] = {}
        for user, mechs in raw.get("users", {}).items():
            users[user] = {m: ScramCredential(base64.b64decode(c["salt"]), base64.b64decode(c["stored_key"]),
                                              base64.b64decode(c["server_key"]), int(c["iterations"]))
                           for m, c in mechs.items()}
        self._users = users
        log.info("loaded SCRAM credentials of %d users from %s", len(users), self.path)

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def mechanisms(self, user: str) -> dict[str, ScramCredential]:
        return dict(self._users.get(user, {}))

    def users(self) -> list[str]:
        return sorted(self._users)

    def apply(self, upserts: list[tuple[str, str, ScramCredential]], deletions: list[tuple[str, str]]) -> None:
        """Apply a batch of changes (user, mechanism[, credential]) and persist them at once."""
        users = {u: dict(m) for u, m in self._users.items()}
        for user, mechanism in deletions:
            users.get(user, {}).pop(mechanism, None)
            if user in users and not users[user]:
                del users[user]
        for user, mechanism, credential in upserts:
            users.setdefault(user, {})[mechanism] = credential
        if self.persist:
            self._write(users)
        self._users = users

    def _write(self, users: dict[str, dict[str, ScramCredential]]) -> None:
        doc = {"version": 1, "users": {
            u: {m: {"salt": base64.b64encode(c.salt).decode(), "stored_key": base64.b64encode(c.stored_key).decode(),
                    "server_key": base64.b64encode(c.server_key).decode(), "iterations": c.iterations}
                for m, c in mechs.items()} for u, mechs in users.items()}}
        tmp = self.path.with_suffix(".json.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

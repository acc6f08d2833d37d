"""Consuming over TLS against plaintext: what the encrypted fetch path costs.

    .venv/bin/python bench/tls.py [--records 20000] [--size 10240] [--rounds 3]

Starts `python -m minibroker` with a PLAINTEXT and an SSL listener (certificates from
minibroker.security.certs, PEM keystore), fills one partition with confluent-kafka, then times a
confluent-kafka consumer process (bench/clients.py consume) reading the whole partition over each
listener, alternating, `--rounds` times. Prints the medians: plaintext fetches go out with
sendfile, TLS fetches are read into memory and encrypted by OpenSSL on the broker's loop.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import PY, ROOT, client, create_topic, free_port, wait_port  # noqa: E402

from minibroker.security.certs import write_certs  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--size", type=int, default=10_240)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="mb-bench-tls-"))
    certs = write_certs(work / "certs", ["127.0.0.1"])
    plain, tls = free_port(), free_port()
    proc = subprocess.Popen(
        [PY, "-m", "minibroker", "--data-dir", str(work / "data"), "--log-level", "WARNING",
         "--override", f"listeners=PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{tls}",
         "--override", "ssl.keystore.type=PEM", "--override", f"ssl.keystore.location={certs.server_keystore}"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=open(work / "broker.log", "wb"))
    try:
        wait_port(plain)
        wait_port(tls)
        boot = f"127.0.0.1:{plain}"
        create_topic(boot, "tls-bench")
        client("produce", boot, "tls-bench", str(a.records), str(a.size))
        ssl_args = ["--config", "security.protocol=SSL", "--config", f"ssl.ca.location={certs.ca}"]
        rates: dict[str, list[float]] = {"plaintext": [], "tls": []}
        for _ in range(a.rounds):
            for name, bootstrap, extra in (("plaintext", boot, []), ("tls", f"127.0.0.1:{tls}", ssl_args)):
                r = client("consume", bootstrap, "tls-bench", str(a.records), *extra)
                rates[name].append(r["bytes"] / r["seconds"] / 1e6)
        p, t = statistics.median(rates["plaintext"]), statistics.median(rates["tls"])
        print(f"| consume {a.records} x {a.size // 1024} KiB | plaintext {p:.1f} MB/s | TLS {t:.1f} MB/s | "
              f"TLS/plaintext {t / p:.2f}x | (medians of {a.rounds}; rounds: "
              f"{', '.join(f'{x:.0f}' for x in rates['plaintext'])} / {', '.join(f'{x:.0f}' for x in rates['tls'])})")
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

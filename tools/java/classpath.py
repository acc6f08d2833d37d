"""Print the class path of the Java Kafka client shipped in a Python wheel.

The jars come from the PyPI wheel `shigawire-apache-flink-libraries` (a third-party repackaging
of Flink's Kafka connector), which carries kafka-clients with its compression codecs and slf4j.
Usage:  java -cp "$(python tools/java/classpath.py)" tools/java/ClientCheck.java HOST:PORT
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

JARS = ("kafka-clients.jar", "slf4j-api.jar", "lz4-java.jar", "snappy-java.jar", "zstd-jni.jar")
WHEEL = "shigawire-apache-flink-libraries"


def kafka_client_jars() -> list[Path]:
    """The jars, or FileNotFoundError naming the wheel to install."""
    spec = importlib.util.find_spec("pyflink")
    for root in (spec.submodule_search_locations or []) if spec else []:
        lib = Path(root) / "lib"
        if (lib / JARS[0]).is_file():
            return [lib / j for j in JARS if (lib / j).is_file()]
    raise FileNotFoundError(f"kafka-clients.jar not found: pip install {WHEEL}")


if __name__ == "__main__":
    try:
        print(os.pathsep.join(map(str, kafka_client_jars())))
    except FileNotFoundError as e:
        sys.exit(str(e))

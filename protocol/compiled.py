"""The compiled twins of the hot modules (issue 33): where they are and whether they are used.

Theory of operation. A few modules every Produce and Fetch goes through are plain typed Python
that mypyc compiles unchanged (`HOT_MODULES`). `tools/compile_hot_modules.py` (run by `make
install`) builds them into `<venv>/minibroker-compiled/`, one extension per module plus mypyc's
shared library, laid out as the packages are, with a manifest of each source it compiled (its
CRC-32 and size). The `.py` files stay the reference and the fallback: nothing is generated into
the source tree, and each package that holds a hot module puts the compiled directory in front of
its own `__path__` (`extend_path`, from its `__init__`), so that Python's import finds the
extension first, but only when

- `MINIBROKER_PURE_PYTHON` is not set (to 1, yes, true: the tests and benchmarks of the pure
  modules, `make test-pure`), and
- every hot module's source is still what was compiled: one edited file turns the whole set off,
  as mypyc links the modules together (a compiled module calls another's functions natively), so
  a stale build can never run beside newer code.

What mypyc enforces that the interpreter does not: every annotation, at run time (a wrong one is
a TypeError); a module's functions bound when it is built (a hot module cannot be monkeypatched);
an interpreted subclass only where the class allows it (`mypyc_attr`); and one type per local, the
first binding's, so a function must not name two kinds of exception alike in its `except` clauses
(tests/protocol/test_compiled_modules.py checks the sources).

Without a C compiler the build is skipped and the broker runs the same code in pure Python.
"""

from __future__ import annotations

import os
import sys
import zlib

PURE_ENV = "MINIBROKER_PURE_PYTHON"
COMPILED_DIR_ENV = "MINIBROKER_COMPILED_DIR"  # another build than the venv's (bench/: a baseline tree)
MANIFEST = "manifest.txt"  # one line per module: "<CRC-32>-<size of its source> <path>"
GROUP = "minibroker_protocol._compiled"  # mypyc's shared library: minibroker_protocol/_compiled__mypyc.*.so

# The modules compiled, as paths from the source root (the checkout: protocol/ and storage/ are
# the minibroker_protocol and minibroker_storage packages). Each was chosen by the profile of the
# produce and fetch paths in bench/README.md; a module here must not be monkeypatched at run time
# (a compiled module binds its calls to another compiled module when it is built).
HOT_MODULES = (
    "minibroker_protocol/types.py",
    "minibroker_protocol/headers.py",
    "minibroker_protocol/framing.py",
    "minibroker_protocol/records/batch.py",
    "minibroker_protocol/records/validate.py",
    "minibroker_storage/log_validator.py",
    "minibroker_storage/file_records.py",
    "minibroker_storage/segment.py",
    "minibroker_storage/log.py",
    # the broker's side of every request (session 16): the connection, its frames, memory and
    # socket, the dispatcher, and the ReplicaManager's append and read. Named here as paths only:
    # nothing in this layer imports them. Not the handlers (their registry marks each function
    # with an attribute, which a compiled function cannot carry) nor Partition (a subclass of an
    # interpreted class with __slots__)
    "minibroker/network/memory_pool.py",
    "minibroker/network/request_reader.py",
    "minibroker/network/transport.py",
    "minibroker/network/processor.py",
    "minibroker/kafka_apis.py",
    "minibroker/replica_manager.py",
)

# Only os, sys and zlib here: this module is imported by the packages' __init__, on the start path
# (pathlib, json or hashlib's OpenSSL would add milliseconds to a start that must stay under 100 ms
# of CPU). A CRC-32 and the size tell an edited source from the one compiled; nothing needs more.
SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def compiled_dir() -> str:
    """Where `make install` builds the twins: in the virtualenv, not the checkout."""
    return os.environ.get(COMPILED_DIR_ENV) or os.path.join(sys.prefix, "minibroker-compiled")


def pure_requested() -> bool:
    return os.environ.get(PURE_ENV, "").strip().lower() in ("1", "yes", "true")


def source_digest(relative: str) -> str:
    with open(os.path.join(SOURCE_ROOT, relative), "rb") as f:
        data = f.read()
    return f"{zlib.crc32(data):08x}-{len(data)}"


def write_manifest(directory: str) -> None:
    """The digests of the sources just compiled into `directory`."""
    with open(os.path.join(directory, MANIFEST), "w") as f:
        f.writelines(f"{source_digest(m)} {m}\n" for m in HOT_MODULES)


def build_is_current(directory: str) -> bool:
    """Whether `directory` holds a build of every hot module's current source."""
    try:
        with open(os.path.join(directory, MANIFEST)) as f:
            built = {path: digest for digest, path in (line.split(" ", 1) for line in f.read().splitlines())}
        return all(built.get(m) == source_digest(m) for m in HOT_MODULES)
    except (OSError, ValueError):
        return False  # no build (no compiler, or `make install` not run), or an unreadable one


_in_use: bool | None = None


def compiled_in_use() -> bool:
    """Whether the compiled twins are imported in this process (decided once)."""
    global _in_use
    if _in_use is None:
        _in_use = not pure_requested() and build_is_current(compiled_dir())
    return _in_use


def extend_path(path: list[str], package: str) -> list[str]:
    """A package's `__path__` with its compiled directory first, if the twins are in use."""
    if not compiled_in_use():
        return path
    return [os.path.join(compiled_dir(), *package.split(".")), *path]

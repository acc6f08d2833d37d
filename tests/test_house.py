"""The "Done when" checks of issue 28 (the house refactor): each fails with its offenders listed.
The measuring is in tools/check_house.py (`python tools/check_house.py [--mypy] [-v]` prints every
metric); this file states the limits."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import check_house  # noqa: E402


def _listed(offences: list[check_house.Offence]) -> str:
    return "\n".join(str(o) for o in offences)


def test_no_import_cycles() -> None:
    found = check_house.import_cycles()
    assert not found, f"{len(found)} import cycles:\n{_listed(found)}"


def test_no_handler_is_typed_any() -> None:
    found = check_house.handlers_typed_any()
    assert not found, f"{len(found)} handlers with a request or response typed Any:\n{_listed(found)}"


def test_no_handler_or_console_module_touches_a_log() -> None:
    found = check_house.log_calls()
    assert not found, (f"{len(found)} uses of a minibroker_storage.log.Log in minibroker/handlers or minibroker/console "
                       f"(go through the ReplicaManager):\n{_listed(found)}")


def test_no_class_over_400_lines() -> None:
    found = check_house.big_classes()
    assert not found, f"classes over {check_house.MAX_CLASS_LINES} lines:\n{_listed(found)}"


def test_mypy_refusing_untyped_defs_is_clean() -> None:
    found = check_house.mypy_untyped()
    assert not found, f"{len(found)} mypy errors with untyped defs refused:\n{_listed(found)}"


def test_lines_using_any_stay_few() -> None:
    found = check_house.any_lines()
    assert len(found) <= check_house.MAX_ANY_LINES, (
        f"{len(found)} lines of minibroker/ use Any (at most {check_house.MAX_ANY_LINES}):\n{_listed(found)}")


def test_at_most_30_function_level_imports_each_with_its_reason() -> None:
    found = check_house.function_imports()
    unreasoned = [o for o, reasoned in found if not reasoned]
    assert len(found) <= check_house.MAX_FUNCTION_IMPORTS and not unreasoned, (
        f"{len(found)} imports inside functions in minibroker/ (at most {check_house.MAX_FUNCTION_IMPORTS}), "
        f"{len(unreasoned)} without '# lazy: <reason>' on the line:\n{_listed([o for o, _ in found])}")


def test_the_log_check_sees_logs_and_only_logs() -> None:
    """What the Log check flags and what it leaves alone, on code written for it."""
    import ast

    code = '''
def handler(services, req, rm, part, image):
    lg = services.topics.get_log("t", 0)
    lg.read(0, 10)
    for log_ in services.topics.get("t").partitions.values():
        log_.high_watermark
    topic = services.topics.by_id(req.topic_id)
    inner = part.log
    for p in req.partitions:
        p.partition, p.high_watermark
    for lg2 in image.partitions.values():
        lg2.high_watermark
    rm.append_records(1), rm.read(1), part.high_watermark, seg.log.read(0, 1)
'''
    fn = ast.parse(code).body[0]
    # Partition objects, metadata images and requests share names with a Log's members: only what
    # came from a Log's way out (get_log, a registry topic's partitions, Partition.log) counts
    assert check_house._log_names(fn) == {"lg", "log_", "topic", "inner"}

"""A partition's segments in base-offset order, with floor/higher lookups (Kafka: LogSegments).

Lists are replaced, not mutated in place where a reader in another thread (a flush) might be
walking them: `add`/`remove` build new lists, so a snapshot taken with `values()` stays valid.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from minibroker_storage.segment import LogSegment


class LogSegments:
    def __init__(self) -> None:
        # one attribute, replaced whole: a reader on another thread sees an old or a new pair
        self._state: tuple[list[int], list[LogSegment]] = ([], [])

    @property
    def _bases(self) -> list[int]:
        return self._state[0]

    @property
    def _segments(self) -> list[LogSegment]:
        return self._state[1]

    def add(self, segment: LogSegment) -> LogSegment:
        bases, segs = list(self._state[0]), list(self._state[1])
        i = bisect.bisect_left(bases, segment.base_offset)
        if i < len(bases) and bases[i] == segment.base_offset:
            segs[i] = segment
        else:
            bases.insert(i, segment.base_offset)
            segs.insert(i, segment)
        self._state = (bases, segs)
        return segment

    def remove(self, base_offset: int) -> LogSegment | None:
        bases, segs = self._state
        i = bisect.bisect_left(bases, base_offset)
        if i == len(bases) or bases[i] != base_offset:
            return None
        self._state = (bases[:i] + bases[i + 1:], segs[:i] + segs[i + 1:])
        return segs[i]

    def clear(self) -> None:
        self._state = ([], [])

    def __len__(self) -> int:
        return len(self._segments)

    def __iter__(self) -> Iterator[LogSegment]:
        return iter(self._segments)

    def __bool__(self) -> bool:
        return bool(self._segments)

    def get(self, base_offset: int) -> LogSegment | None:
        bases, segs = self._state
        i = bisect.bisect_left(bases, base_offset)
        return segs[i] if i < len(bases) and bases[i] == base_offset else None

    def contains(self, base_offset: int) -> bool:
        return self.get(base_offset) is not None

    @property
    def first(self) -> LogSegment | None:
        return self._segments[0] if self._segments else None

    @property
    def active(self) -> LogSegment:
        """The last segment, the one appends go to."""
        return self._segments[-1]

    def base_offsets(self) -> list[int]:
        return list(self._bases)

    def floor_segment(self, offset: int) -> LogSegment | None:
        """The segment with the greatest base offset <= offset."""
        bases, segs = self._state
        i = bisect.bisect_right(bases, offset)
        return segs[i - 1] if i else None

    def higher_segment(self, offset: int) -> LogSegment | None:
        """The segment with the least base offset > offset."""
        bases, segs = self._state
        i = bisect.bisect_right(bases, offset)
        return segs[i] if i < len(segs) else None

    def values(self, start: int | None = None, end: int | None = None) -> list[LogSegment]:
        """A snapshot of the segments; with bounds, those holding offsets in [start, end): from
        the segment that includes `start` up to the one that includes `end - 1`."""
        bases, segs = self._state
        if start is None and end is None:
            return list(segs)
        lo = 0
        if start is not None:
            if end is not None and start >= end:
                return []
            lo = max(0, bisect.bisect_right(bases, start) - 1)
        hi = len(segs) if end is None else bisect.bisect_left(bases, end)
        return segs[lo:hi]

    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

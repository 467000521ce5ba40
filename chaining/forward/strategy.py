"""Conflict-resolution strategies: CLIPS's seven, by name.

Source: CLIPS 6.4 Basic Programming Guide, section 5.3 "Conflict Resolution Strategies".
"""

from __future__ import annotations

from enum import IntEnum


class Strategy(IntEnum):
    """The CLIPS strategy codes (as `SetStrategy` takes them)."""

    DEPTH = 0
    BREADTH = 1
    LEX = 2
    MEA = 3
    COMPLEXITY = 4
    SIMPLICITY = 5
    RANDOM = 6

    @classmethod
    def parse(cls, name: str | Strategy | None, default: Strategy | None = None) -> Strategy:
        """`"depth"` -> `Strategy.DEPTH`; None gives `default` (depth when not given).

        Raises:
            ValueError: naming the unknown strategy and the accepted names.
        """
        if name is None:
            return default if default is not None else cls.DEPTH
        if isinstance(name, Strategy):
            return name
        try:
            return cls[str(name).strip().upper()]
        except KeyError:
            raise ValueError(f"unknown strategy {name!r}; expected one of {', '.join(STRATEGY_NAMES)}") from None

    @property
    def label(self) -> str:
        return self.name.lower()


STRATEGY_NAMES = tuple(s.name.lower() for s in Strategy)

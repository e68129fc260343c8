"""Charts as SVG text: the few shapes the report's charts draw, axes (log or linear) and their
ticks. A browser draws them as it draws the page; nothing to install, nothing rasterised."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from html import escape

FONT = "system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif"
CHAR_WIDTH = 0.6
"""About how wide a character is, as a fraction of the font's size (for label space)."""


def _number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _attributes(attrs: dict[str, object]) -> str:
    return "".join(
        f' {name.rstrip("_").replace("_", "-")}="{escape(str(v))}"'
        for name, v in attrs.items()
        if v is not None
    )


@dataclass
class Canvas:
    """An SVG document built shape by shape, in drawing order (later shapes on top)."""

    width: float
    height: float
    title: str
    parts: list[str] = field(default_factory=list)

    def add(self, tag: str, content: str | None = None, /, **attrs: object) -> None:
        """A shape, or (with content) an element holding that text."""
        shown = {k: _number(v) if isinstance(v, float) else v for k, v in attrs.items()}
        if content is None:
            self.parts.append(f"<{tag}{_attributes(shown)}/>")
        else:
            self.parts.append(f"<{tag}{_attributes(shown)}>{escape(content)}</{tag}>")

    def open(self, tag: str, **attrs: object) -> None:
        self.parts.append(f"<{tag}{_attributes(attrs)}>")

    def close(self, tag: str) -> None:
        self.parts.append(f"</{tag}>")

    def line(self, x1: float, y1: float, x2: float, y2: float, **attrs: object) -> None:
        attrs.setdefault("stroke", "black")
        self.add("line", x1=float(x1), y1=float(y1), x2=float(x2), y2=float(y2), **attrs)

    def text(self, x: float, y: float, content: str, size: float = 11, **attrs: object) -> None:
        self.add("text", content, x=float(x), y=float(y), font_size=float(size), **attrs)

    def marker(self, shape: str, x: float, y: float, size: float, **attrs: object) -> None:
        """A filled diamond ("D"), or a triangle pointing left ("<") or right (">")."""
        h = size / 2
        corners = {
            "D": [(x, y - h), (x + h, y), (x, y + h), (x - h, y)],
            "<": [(x - h, y), (x + h, y - h), (x + h, y + h)],
            ">": [(x + h, y), (x - h, y - h), (x - h, y + h)],
        }[shape]
        points = " ".join(f"{_number(a)},{_number(b)}" for a, b in corners)
        self.add("polygon", points=points, **attrs)

    def document(self) -> str:
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{_number(self.width)}" '
            f'height="{_number(self.height)}" viewBox="0 0 {_number(self.width)} '
            f'{_number(self.height)}" font-family="{escape(FONT)}">'
        )
        return "\n".join([head, f"<title>{escape(self.title)}</title>", *self.parts, "</svg>"])


def text_width(text: str, size: float) -> float:
    return len(text) * size * CHAR_WIDTH


@dataclass(frozen=True)
class Axis:
    """Values from `lo` to `hi` onto the pixels `start` to `end` (end < start: upwards)."""

    lo: float
    hi: float
    start: float
    end: float
    log: bool

    def __call__(self, value: float) -> float:
        if self.log:
            where = math.log(value / self.lo) / math.log(self.hi / self.lo)
        else:
            where = (value - self.lo) / (self.hi - self.lo)
        return self.start + where * (self.end - self.start)


def log_ticks(lo: float, hi: float, most: int = 7) -> list[float]:
    """Round numbers (1, 2 and 5 times a power of ten) between lo and hi, at most `most`: only
    the powers of ten when those are too many, more in-between numbers when too few, and evenly
    spaced round numbers over a span too short for those."""
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    for mantissas in ((1.0, 2.0, 5.0), (1.0,), (1.0, 1.5, 2.0, 3.0, 5.0, 7.0)):
        ticks = [
            m * 10.0**k
            for k in range(first, last + 1)
            for m in mantissas
            if lo <= m * 10.0**k <= hi
        ]
        if 2 <= len(ticks) <= most:
            return ticks
    return ticks if len(ticks) >= 2 else linear_ticks(lo, hi, most)


def linear_ticks(lo: float, hi: float, most: int = 7) -> list[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    step = 10.0 ** math.floor(math.log10(span))
    for factor in (0.1, 0.2, 0.5, 1.0, 2.0, 5.0):
        if span / (step * factor) <= most:
            step *= factor
            break
    first = math.ceil(lo / step)
    return [k * step for k in range(first, math.floor(hi / step) + 1)]


def tick_label(value: float) -> str:
    return f"{value:g}"


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """Q1, median and Q3, linearly interpolated (numpy's default, as box plots draw them)."""
    ordered = sorted(values)

    def at(q: float) -> float:
        position = q * (len(ordered) - 1)
        below = math.floor(position)
        above = min(below + 1, len(ordered) - 1)
        return ordered[below] + (ordered[above] - ordered[below]) * (position - below)

    return at(0.25), at(0.5), at(0.75)


def whisker_reach(values: Sequence[float], q1: float, q3: float) -> tuple[float, float]:
    """The box plot's whiskers: the most extreme values within 1.5 IQR of the box."""
    reach = 1.5 * (q3 - q1)
    inside = [v for v in values if q1 - reach <= v <= q3 + reach]
    return min(inside), max(inside)


def bounds(values: Iterable[float]) -> tuple[float, float]:
    shown = list(values)
    return min(shown), max(shown)

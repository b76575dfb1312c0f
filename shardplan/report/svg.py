"""Small SVG building blocks for the report's server-side charts: escaping, number formats, axis ticks, colours.

Why hand-written SVG: the report must open with no network and no script library, and a chart is a few
hundred rectangles; strings are all it takes, and the browser test checks what they draw.
"""
from __future__ import annotations

import html
import math

GIB = 1024 ** 3
FONT = "font-family='system-ui, sans-serif' font-size='11'"

# colour-blind-safe qualitative palette (Okabe & Ito 2008, "Color Universal Design"), then Tableau 10 extras
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999",
           "#4e79a7", "#9c755f", "#edc948", "#b07aa1")

# fixed colours for the memory model's terms (constraints/memory/per_rank.py names), so charts of different recipes agree
TERM_COLOURS = {"weights": "#0072B2", "gradients": "#56B4E9", "optimizer_state": "#009E73", "activations": "#E69F00",
                "embedding_activations": "#F0E442", "output_activations": "#D55E00", "recompute_working_set": "#CC79A7",
                "comm_buffers": "#9c755f", "fragmentation": "#b07aa1", "framework_overhead": "#999999"}

TIME_COLOURS = {"compute": "#0072B2", "recompute": "#56B4E9", "tp_comm": "#E69F00", "cp_comm": "#F0E442",
                "ep_comm": "#D55E00", "dp_comm": "#CC79A7", "pp_comm": "#9c755f", "pp_bubble": "#cccccc",
                "optimizer": "#009E73"}

EVENT_COLOURS = {"F": "#0072B2", "B": "#009E73", "W": "#56B4E9", "dp": "#CC79A7", "optimizer": "#E69F00"}


def esc(text) -> str:
    return html.escape(str(text), quote=True)


def colour(name: str, table: dict, index: int) -> str:
    """The fixed colour of a known name, else the palette's entry for its position."""
    return table.get(name) or PALETTE[index % len(PALETTE)]


def nice_ticks(hi: float, n: int = 5) -> list[float]:
    """Round tick values from 0 to at least `hi` (steps of 1, 2, 2.5 or 5 times a power of ten)."""
    if hi <= 0:
        return [0.0, 1.0]
    raw = hi / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    count = math.ceil(hi / step - 1e-9)
    return [round(i * step, 12) for i in range(count + 1)]


def fmt(value: float) -> str:
    """A tick label: no trailing zeros, thousands separators."""
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:,.3g}" if abs(value) < 1 else f"{value:,.2f}".rstrip("0").rstrip(".")


def fmt_s(seconds: float) -> str:
    """A duration with its unit chosen for reading (µs, ms, s)."""
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def rect(x: float, y: float, w: float, h: float, fill: str, title: str = "", cls: str = "", extra: str = "") -> str:
    tip = f"<title>{esc(title)}</title>" if title else ""
    c = f" class='{cls}'" if cls else ""
    return (f"<rect{c} x='{x:.2f}' y='{y:.2f}' width='{max(w, 0):.2f}' height='{max(h, 0):.2f}' fill='{fill}'{extra}>"
            f"{tip}</rect>")


def text(x: float, y: float, body, anchor: str = "start", extra: str = "") -> str:
    return f"<text x='{x:.2f}' y='{y:.2f}' text-anchor='{anchor}' {FONT}{extra}>{esc(body)}</text>"


def line(x1: float, y1: float, x2: float, y2: float, stroke: str = "#333", extra: str = "") -> str:
    return f"<line x1='{x1:.2f}' y1='{y1:.2f}' x2='{x2:.2f}' y2='{y2:.2f}' stroke='{stroke}'{extra}/>"


def svg(width: float, height: float, body: list[str], cls: str, label: str) -> str:
    """One chart: a sized <svg> with an accessible label."""
    return (f"<svg class='chart {cls}' xmlns='http://www.w3.org/2000/svg' width='{width:.0f}' height='{height:.0f}' "
            f"viewBox='0 0 {width:.0f} {height:.0f}' role='img' aria-label='{esc(label)}'>" + "".join(body) + "</svg>")


def legend(items: list[tuple[str, str]], x: float, y: float, width: float) -> tuple[list[str], float]:
    """Swatches with labels, wrapped into rows within `width`; returns (elements, height used)."""
    out, cx, cy = [], x, y
    for label, fill in items:
        w = 18 + 6.2 * len(label) + 14
        if cx + w > x + width and cx > x:
            cx, cy = x, cy + 16
        out.append(f"<g class='legend-item'>{rect(cx, cy, 11, 11, fill)}{text(cx + 15, cy + 9.5, label)}</g>")
        cx += w
    return out, cy - y + 16

"""Open a report in headless Chromium (Debian's `chromium` + `chromium-driver`), measure what its charts drew,
collect the console's errors and save a full-page screenshot.

Why a real browser: an SVG string can be well-formed and still draw nothing (zero sizes, NaN coordinates,
attributes the browser rejects, which it logs as console errors). The browser test and the README's screenshot
both go through `inspect_page`. Needs selenium (the `test` extra); never touches the network (the driver and the
browser are local binaries, so Selenium Manager downloads nothing).

    python -m shardplan.report.browser report.html screenshot.png
"""
from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
DRIVER_PATHS = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")

# per chart: how many of each element the page drew, and how many of those have a zero-area box
_MEASURE_JS = """
const count = (sel) => {
  const els = Array.from(document.querySelectorAll(sel));
  const empty = els.filter(e => { const r = e.getBoundingClientRect(); return !(r.width > 0 && r.height > 0); });
  return [els.length, empty.length];
};
const out = {};
for (const sel of arguments[0]) { out[sel] = count(sel); }
out.height = document.documentElement.scrollHeight;
return out;
"""

SELECTORS = ("svg.chart", "svg.memory-chart", "svg.memory-chart g.mem-bar", "svg.memory-chart rect.seg",
             "svg.memory-chart line.usable-line", "svg.time-chart g.time-bar", "svg.timeline-chart",
             "svg.timeline-chart g.tl-row", "svg.timeline-chart rect.ev", "svg.timeline-chart rect.span", "svg.timeline-zoom g.tl-row",
             "svg.timeline-zoom rect.ev", "svg.sweep-chart", "svg.sweep-chart g.series",
             "svg.sweep-chart circle.point")


@dataclass
class PageFacts:
    counts: dict[str, int] = field(default_factory=dict)      # selector -> elements drawn
    empty: dict[str, int] = field(default_factory=dict)       # selector -> elements with a zero-area box
    severe: list[str] = field(default_factory=list)           # console entries at level SEVERE
    screenshot: Path | None = None


def find_browser() -> tuple[str | None, str | None]:
    """(chromium binary, chromedriver binary) found on this machine, None where absent."""
    def first(paths, name):
        return next((p for p in paths if Path(p).exists()), None) or shutil.which(name)
    return first(CHROMIUM_PATHS, "chromium"), first(DRIVER_PATHS, "chromedriver")


def inspect_page(html_path: Path, screenshot_path: Path, width: int = 1280) -> PageFacts:
    """Load the page from disk, measure SELECTORS, read the console log, save a full-page PNG."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = find_browser()
    if binary is None or driver_path is None:
        raise FileNotFoundError("chromium / chromedriver not found; apt-get install -y chromium chromium-driver")
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
                f"--window-size={width},1000", "--force-device-scale-factor=1"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)
    try:
        driver.get(Path(html_path).resolve().as_uri())
        measured = driver.execute_script(_MEASURE_JS, list(SELECTORS))
        facts = PageFacts(counts={s: measured[s][0] for s in SELECTORS}, empty={s: measured[s][1] for s in SELECTORS})
        facts.severe = [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        driver.set_window_size(width, min(int(measured["height"]) + 40, 16000))
        tmp = Path(screenshot_path).with_suffix(".tmp.png")
        driver.save_screenshot(str(tmp))
        tmp.replace(screenshot_path)  # atomic: a reader never sees half a PNG
        facts.screenshot = Path(screenshot_path)
        return facts
    finally:
        driver.quit()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m shardplan.report.browser REPORT.html SCREENSHOT.png", file=sys.stderr)
        return 2
    try:
        facts = inspect_page(Path(argv[0]), Path(argv[1]))
    except FileNotFoundError as exc:  # no browser on this machine, or no report at that path: one line, not a traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for sel in SELECTORS:
        print(f"{sel:<36} {facts.counts[sel]:>6} drawn, {facts.empty[sel]} empty")
    print(f"console errors: {len(facts.severe)}")
    for msg in facts.severe:
        print("  " + msg)
    return 1 if facts.severe else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

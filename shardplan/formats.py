"""Output formats shared by every command: `--format table|json|csv|markdown` (`--json` is an alias of json).

How a command uses it:
    @format_option                      # adds --format and --json
    def my_command(..., fmt, as_json): ...
        emit(rows, resolve_format(fmt, as_json), columns=COLUMNS, json_data=result_json, title="...")
- `rows`: a list of flat dicts (one per table row); `columns`: (header, key, python format spec or callable) tuples;
- `json_data`: what `--format json` prints (default: `rows`), e.g. `result.to_json()` of a shardplan.results model;
- `table` is drawn by rich and adapts to the terminal width (long names wrap or fold, never break the grid);
  `csv` and `markdown` write every column with the same cell text as the table (markdown as a GitHub pipe table).
Commands whose text view is richer than one table (check, solve) pass `text=` for the table format; csv and markdown
then show `rows` (e.g. solve's ranked recipes, check's memory terms).
"""
from __future__ import annotations

import csv
import io
import json
from typing import Any, Callable, Iterable, Optional, Sequence, Union

import click

FORMATS = ("table", "json", "csv", "markdown")
Column = tuple[str, str, Union[str, Callable[[Any], str]]]


def format_option(fn):
    """--format table|json|csv|markdown and --json (alias of --format json); the command receives `fmt` and `as_json`
    and calls `resolve_format(fmt, as_json)`."""
    fn = click.option("--json", "as_json", is_flag=True, help="same as --format json")(fn)
    return click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
                        help="table (fits the terminal), json (the API result), csv or markdown")(fn)


def resolve_format(fmt: str, as_json: bool) -> str:
    """The effective format: --json wins (it is the older spelling of --format json)."""
    return "json" if as_json else fmt


def cell(value: Any, spec: Union[str, Callable[[Any], str]] = "{}") -> str:
    """One cell's text: '-' for None, else the spec (a format string or a callable) applied to the value."""
    if value is None:
        return "-"
    return spec(value) if callable(spec) else spec.format(value)


def to_csv(rows: Sequence[dict], columns: Sequence[Column]) -> str:
    """CSV for machines: numbers without the table's thousands separators (`models --format csv` printed
    "671,026,404,352", quoted, where a spreadsheet wants 671026404352)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([header for header, _, _ in columns])
    for row in rows:
        writer.writerow([cell(row.get(key), _plain(spec, row.get(key))) for _, key, spec in columns])
    return buf.getvalue().rstrip("\n")


def _plain(spec, value):
    """`spec` without its thousands separator, for a number."""
    if isinstance(spec, str) and isinstance(value, (int, float)) and not isinstance(value, bool):
        return spec.replace("{:,", "{:")
    return spec


def to_markdown(rows: Sequence[dict], columns: Sequence[Column]) -> str:
    def esc(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(esc(h) for h, _, _ in columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(esc(cell(row.get(key), spec)) for _, key, spec in columns) + " |" for row in rows]
    return "\n".join(lines)


def to_table(rows: Sequence[dict], columns: Sequence[Column], title: Optional[str] = None, width: Optional[int] = None) -> str:
    """A rich table as text: numeric columns right-aligned, the first column folds long names; fits `width` (default:
    the terminal's, 100 when stdout is not one)."""
    from rich.table import Table

    table = Table(title=title, box=None, title_justify="left", pad_edge=False, header_style="bold")
    numeric = [all(isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool) for r in rows if r.get(key) is not None)
               for _, key, _ in columns]
    texts = [[cell(row.get(key), spec) for _, key, spec in columns] for row in rows]
    needed = 2 * (len(columns) - 1)  # one space of padding either side of each column border
    for i, (header, _, _) in enumerate(columns):
        # numbers never wrap (a folded number misreads); text folds, so long names take extra lines, not the grid
        if numeric[i] and rows:
            widest = max([len(header)] + [len(r[i]) for r in texts])
            table.add_column(header, justify="right", no_wrap=True, min_width=widest)
            needed += widest
        else:
            table.add_column(header, justify="left", overflow="fold", min_width=min(len(header), 8))
            needed += min(len(header), 8)
    for row in texts:
        table.add_row(*row)
    # never crop a column: below the table's minimum width the lines run past the terminal (which wraps them) instead;
    # rich's column collapse is not exactly predictable, so widen until every number and the last header are whole
    width = max(width or _terminal_width(), needed)
    numbers = [r[i] for r in texts for i in range(len(columns)) if numeric[i]]
    for _ in range(64):
        out = _print(table, width)
        if all(n in out for n in numbers) and columns[-1][0].split()[-1] in out:
            break
        width += 2
    return out


def _print(table, width: int) -> str:
    from rich.console import Console

    console = Console(file=io.StringIO(), width=width, color_system=None, highlight=False, emoji=False, soft_wrap=False)
    console.print(table)
    return "\n".join(line.rstrip() for line in console.file.getvalue().rstrip("\n").splitlines())

def _terminal_width() -> int:
    import shutil
    import sys

    if sys.stdout.isatty():
        return shutil.get_terminal_size((100, 24)).columns
    return 160


def render(rows: Sequence[dict], fmt: str, columns: Sequence[Column], json_data: Any = None, text: Optional[str] = None,
           title: Optional[str] = None) -> str:
    """The output of one command in `fmt`; `text` replaces the table view when given."""
    if fmt == "json":
        return json.dumps(rows if json_data is None else json_data, indent=2)
    if fmt == "csv":
        return to_csv(rows, columns)
    if fmt == "markdown":
        return to_markdown(rows, columns)
    return text if text is not None else to_table(rows, columns, title=title)


def emit(rows: Sequence[dict], fmt: str, columns: Sequence[Column], json_data: Any = None, text: Optional[str] = None,
         title: Optional[str] = None) -> None:
    """Print `render(...)` on stdout."""
    click.echo(render(rows, fmt, columns, json_data=json_data, text=text, title=title))


def dicts(items: Iterable[Any]) -> list[dict]:
    """Result models (shardplan.results) as the flat dicts the formats read."""
    return [item.to_json() if hasattr(item, "to_json") else dict(item) for item in items]

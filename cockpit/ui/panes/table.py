"""Update a DataTable by row key: remove what left, update changed cells, add what is new, keep
the order and the cursor (dolphie's habit: never clear a live table)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist

from ..shown import shown

__all__ = ["sync_rows"]


def _as_text(cell: Any) -> Any:  # Any: DataTable cells
    """A ``str`` cell becomes a plain ``Text``: DataTable parses str cells as markup, and remote
    text (a note ``try [fix]``, a ``[rank0]:`` prefix, a path with ``[/]``) is data, never markup;
    it is shown through :func:`~cockpit.ui.shown.shown` (no escapes; no secrets when sharing)."""
    return Text(shown(cell)) if isinstance(cell, str) else cell


def _plain(cell: Any) -> str:  # Any: a DataTable cell
    return cell.plain if hasattr(cell, "plain") else str(cell)


def _width(cell: Any) -> int:  # Any: a DataTable cell
    return cell.cell_len if isinstance(cell, Text) else cell_len(str(cell))


def sync_rows(table: DataTable[Any], rows: Sequence[tuple[str, Sequence[Any]]], *, key_column: int = 0,  # Any: DataTable cells (str and Text)
              stick_to_top: bool = False) -> bool:
    """Make ``table`` show ``rows`` (``(key, cells)`` in display order); returns True if it changed.

    Cells are compared by equality (Rich ``Text`` compares text and styles), so an unchanged row
    costs a comparison, not a redraw.  ``key_column`` is a column whose text is the row key (the
    order is restored by sorting on it).  The cursor stays on its row; with ``stick_to_top`` a
    cursor on the first row stays on the first row (a newest-first list follows new entries).
    """
    rows = [(k, [_as_text(c) for c in cells]) for k, cells in rows]
    wanted = {k: cells for k, cells in rows}
    order = {k: i for i, (k, _) in enumerate(rows)}
    cursor_key: str | None = None
    at_top = table.cursor_row <= 0
    if table.row_count and table.cursor_row >= 0 and not (stick_to_top and at_top):
        try:
            cursor_key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except CellDoesNotExist:  # an empty or just-emptied table
            cursor_key = None
    existing = list(table.rows)
    changed = False
    columns = list(table.columns)
    for row_key in existing:
        if row_key.value not in wanted:
            table.remove_row(row_key)
            changed = True
    present = set(table.rows)
    for key, cells in rows:
        if key in present:
            old = table.get_row(key)
            for col, o, n in zip(columns, old, cells, strict=False):
                if o != n:
                    # re-measure the column only when the cell grew (each re-measure walks the
                    # column's cells on the next idle)
                    table.update_cell(key, col, n, update_width=_width(n) > _width(o))
                    changed = True
        else:
            table.add_row(*cells, key=key)
            changed = True
    current = [r.key.value for r in table.ordered_rows]
    if current != [k for k, _ in rows]:
        col = columns[key_column]
        by_text = {_plain(cells[key_column]): order[k] for k, cells in rows}
        table.sort(col, key=lambda cell: by_text.get(_plain(cell), 1 << 30))
        changed = True
    if cursor_key is not None and cursor_key in wanted:
        idx = table.get_row_index(cursor_key)
        if idx != table.cursor_row:
            table.move_cursor(row=idx, animate=False, scroll=False)
    elif stick_to_top and at_top and table.row_count and table.cursor_row != 0:
        table.move_cursor(row=0, animate=False, scroll=False)
    return changed

"""``log --graph``: git's commit order and drawing, so a history and its git mirror look alike.

The order and the drawing follow git's ``log --graph`` (git's graph.c, as of git 2.25-2.39):
children before parents, a branch's commits kept together, a merge's further parents in new
columns to its right. Everything here works on ids and parent lists already read; nothing reads
a repository.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from .styled import Styled

LANE_COLORS = (
    "red",
    "green",
    "yellow",
    "blue",
    "magenta",
    "cyan",
    "bold red",
    "bold green",
    "bold yellow",
    "bold blue",
    "bold magenta",
    "bold cyan",
)
"""git's default log.graphColors: six colors, then the same six in bold."""


def graph_order(parents: Mapping[str, Sequence[str]], tips: Sequence[str] = ()) -> list[str]:
    """Order commits for ``--graph`` as git does (``--topo-order``): children before parents.

    ``parents`` maps every commit to show to its parents (parents outside the mapping are
    ignored); ``tips`` lists the starting commits in the order to show them (git: newest
    first). After a commit, the parents it made ready are shown last-ready-first, so a merge's
    second-parent line comes before its first-parent line and each branch stays together.
    """
    waiting = dict.fromkeys(parents, 1)
    for commit_parents in parents.values():
        for parent in commit_parents:
            if parent in waiting:
                waiting[parent] += 1
    starts = [t for t in dict.fromkeys(tips) if waiting.get(t) == 1]
    starts += [c for c in parents if waiting[c] == 1 and c not in starts]
    stack = starts[::-1]
    order: list[str] = []
    while stack:
        commit = stack.pop()
        for parent in parents[commit]:
            if waiting.get(parent, 0) == 0:
                continue
            waiting[parent] -= 1
            if waiting[parent] == 1:
                stack.append(parent)
        waiting[commit] = 0
        order.append(commit)
    return order


_PADDING, _PRE_COMMIT, _COMMIT, _POST_MERGE, _COLLAPSING = range(5)
_MERGE_CHARS = "/|\\"

Cell = tuple[str, "int | None"]
"""One character of a graph row and the lane color index it is drawn in (None: no color)."""


class _GitGraph:
    """git's graph state machine: columns (lanes) and a mapping of where each line goes.

    ``mapping[2k]`` is the column the line now in column ``k`` is heading to, ``mapping[2k+1]``
    one in between columns; -1 is empty. Rows are emitted one at a time by :meth:`next_row`.
    """

    def __init__(self) -> None:
        self.commit: str | None = None
        self.parents: list[str] = []
        self.width = 0
        self.expansion_row = 0
        self.state = _PADDING
        self.prev_state = _PADDING
        self.commit_index = 0
        self.prev_commit_index = 0
        self.merge_layout = 0
        self.edges_added = 0
        self.prev_edges_added = 0
        self.columns: list[tuple[str, int]] = []
        self.new_columns: list[tuple[str, int]] = []
        # Both mapping arrays keep stale entries past mapping_size, as git's do: the commit row
        # after a collapse reads the previous mapping.
        self.mapping: list[int] = []
        self.old_mapping: list[int] = []
        self.mapping_size = 0
        self.color = len(LANE_COLORS) - 1

    # -- bookkeeping -------------------------------------------------------------------------

    @property
    def num_parents(self) -> int:
        return len(self.parents)

    def _grow(self, size: int) -> None:
        for array in (self.mapping, self.old_mapping):
            if len(array) < size:
                array.extend([-1] * (size - len(array)))

    def _new_column_of(self, commit: str) -> int:
        for index, (column_commit, _) in enumerate(self.new_columns):
            if column_commit == commit:
                return index
        return -1

    def _color_of(self, commit: str) -> int:
        for column_commit, color in self.columns:
            if column_commit == commit:
                return color
        return self.color

    def _insert(self, commit: str, index: int) -> None:
        column = self._new_column_of(commit)
        if column < 0:
            column = len(self.new_columns)
            self.new_columns.append((commit, self._color_of(commit)))
        if self.num_parents > 1 and index > -1 and self.merge_layout == -1:
            # The first parent of a merge: lean the merge left when that parent's column is
            # to the left, so the line joins it at once.
            distance = index - column
            shift = 2 * distance - 3 if distance > 1 else 1
            self.merge_layout = 0 if distance > 0 else 1
            self.edges_added = self.num_parents + self.merge_layout - 2
            where = self.width + (self.merge_layout - 1) * shift
            self.width += 2 * self.merge_layout
        elif self.edges_added > 0 and column == self.mapping[self.width - 2]:
            # A later parent already in the last column: its edge joins that column directly.
            where = self.width - 2
            self.edges_added = -1
        else:
            where = self.width
            self.width += 2
        self.mapping[where] = column

    def update(self, commit: str, parents: Sequence[str]) -> None:
        """Start drawing ``commit`` with its (interesting) parents."""
        self.commit = commit
        self.parents = list(parents)
        self.prev_commit_index = self.commit_index
        self.columns, self.new_columns = self.new_columns, []
        size = 2 * (len(self.columns) + self.num_parents)
        self._grow(size)
        self.mapping_size = size
        for index in range(size):
            self.mapping[index] = -1
        self.width = 0
        self.prev_edges_added = self.edges_added
        self.edges_added = 0
        seen = False
        in_columns = True
        for index in range(len(self.columns) + 1):
            if index == len(self.columns):
                if seen:
                    break
                in_columns = False
                column_commit = commit
            else:
                column_commit = self.columns[index][0]
            if column_commit == commit:
                seen = True
                self.commit_index = index
                self.merge_layout = -1
                for parent in self.parents:
                    if self.num_parents > 1 or not in_columns:
                        self.color = (self.color + 1) % len(LANE_COLORS)
                    self._insert(parent, index)
                if self.num_parents == 0:
                    self.width += 2
            else:
                self._insert(column_commit, -1)
        while self.mapping_size > 1 and self.mapping[self.mapping_size - 1] < 0:
            self.mapping_size -= 1
        self.expansion_row = 0
        self.state = _PRE_COMMIT if self._needs_pre_commit_row() else _COMMIT

    def _dashed_parents(self) -> int:
        return self.num_parents + self.merge_layout - 3

    def _needs_pre_commit_row(self) -> bool:
        return (
            self.num_parents >= 3
            and self.commit_index < len(self.columns) - 1
            and self.expansion_row < 2 * self._dashed_parents()
        )

    def _mapping_settled(self) -> bool:
        return all(
            target < 0 or target == index // 2
            for index, target in enumerate(self.mapping[: self.mapping_size])
        )

    def _set_state(self, state: int) -> None:
        self.prev_state = self.state
        self.state = state

    @property
    def finished(self) -> bool:
        """Whether every row of the current commit has been emitted."""
        return self.state == _PADDING

    # -- rows --------------------------------------------------------------------------------

    def next_row(self) -> tuple[list[Cell], bool]:
        """Return the next row (padded to the commit's width) and whether it is the commit's."""
        row: list[Cell] = []
        is_commit = False
        if self.state == _PADDING:
            for _, color in self.new_columns:
                row += [("|", color), (" ", None)]
        elif self.state == _PRE_COMMIT:
            self._pre_commit_row(row)
        elif self.state == _COMMIT:
            self._commit_row(row)
            is_commit = True
        elif self.state == _POST_MERGE:
            self._post_merge_row(row)
        else:
            self._collapsing_row(row)
        row += [(" ", None)] * (self.width - len(row))
        return row, is_commit

    def _pre_commit_row(self, row: list[Cell]) -> None:
        seen = False
        for index, (column_commit, color) in enumerate(self.columns):
            if column_commit == self.commit:
                seen = True
                row.append(("|", color))
                row += [(" ", None)] * self.expansion_row
            elif seen and self.expansion_row == 0:
                leaning = self.prev_state == _POST_MERGE and self.prev_commit_index < index
                row.append(("\\" if leaning else "|", color))
            elif seen:
                row.append(("\\", color))
            else:
                row.append(("|", color))
            row.append((" ", None))
        self.expansion_row += 1
        if not self._needs_pre_commit_row():
            self._set_state(_COMMIT)

    def _commit_row(self, row: list[Cell]) -> None:
        seen = False
        for index in range(len(self.columns) + 1):
            if index == len(self.columns):
                if seen:
                    break
                column_commit, color = self.commit or "", 0
            else:
                column_commit, color = self.columns[index]
            if column_commit == self.commit:
                seen = True
                row.append(("*", None))
                if self.num_parents > 2:
                    dashed = self._dashed_parents()
                    for number in range(dashed):
                        target = self.mapping[(self.commit_index + number + 2) * 2]
                        dash_color = self.new_columns[target][1]
                        row.append(("-", dash_color))
                        row.append(("." if number == dashed - 1 else "-", dash_color))
            elif seen and self.edges_added > 1:
                row.append(("\\", color))
            elif seen and self.edges_added == 1:
                leaning = (
                    self.prev_state == _POST_MERGE
                    and self.prev_edges_added > 0
                    and self.prev_commit_index < index
                )
                row.append(("\\" if leaning else "|", color))
            elif (
                self.prev_state == _COLLAPSING
                and self.old_mapping[2 * index + 1] == index
                and self.mapping[2 * index] < index
            ):
                row.append(("/", color))
            else:
                row.append(("|", color))
            row.append((" ", None))
        if self.num_parents > 1:
            self._set_state(_POST_MERGE)
        elif self._mapping_settled():
            self._set_state(_PADDING)
        else:
            self._set_state(_COLLAPSING)

    def _post_merge_row(self, row: list[Cell]) -> None:
        seen = False
        first_parent = self.parents[0]
        parent_color: int | None = None
        for index in range(len(self.columns) + 1):
            if index == len(self.columns):
                if seen:
                    break
                column_commit, color = self.commit or "", 0
            else:
                column_commit, color = self.columns[index]
            if column_commit == self.commit:
                seen = True
                kind = self.merge_layout
                for number, parent in enumerate(self.parents):
                    row.append(
                        (_MERGE_CHARS[kind], self.new_columns[self._new_column_of(parent)][1])
                    )
                    if kind == 2:
                        if self.edges_added > 0 or number < self.num_parents - 1:
                            row.append((" ", None))
                    else:
                        kind += 1
                if self.edges_added == 0:
                    row.append((" ", None))
            elif seen:
                row.append(("\\" if self.edges_added > 0 else "|", color))
                row.append((" ", None))
            else:
                row.append(("|", color))
                if self.merge_layout != 0 or index != self.commit_index - 1:
                    row.append(("_", parent_color) if parent_color is not None else (" ", None))
            if column_commit == first_parent:
                parent_color = color
        self._set_state(_PADDING if self._mapping_settled() else _COLLAPSING)

    def _collapsing_row(self, row: list[Cell]) -> None:
        self.mapping, self.old_mapping = self.old_mapping, self.mapping
        size = self.mapping_size
        mapping, old = self.mapping, self.old_mapping
        for index in range(size):
            mapping[index] = -1
        horizontal = -1
        horizontal_target = -1
        for index in range(size):
            target = old[index]
            if target < 0:
                continue
            if 2 * target == index:
                mapping[index] = target
            elif mapping[index - 1] < 0:
                # Nothing to the left: move one step left.
                mapping[index - 1] = target
                if horizontal == -1:
                    horizontal, horizontal_target = index, target
                    for between in range(2 * target + 3, index - 2, 2):
                        mapping[between] = target
            elif mapping[index - 1] == target:
                pass  # joins the line to its left, which goes to the same parent
            else:
                # Cross the line to the left, which goes elsewhere.
                mapping[index - 2] = target
                if horizontal == -1:
                    horizontal, horizontal_target = index - 1, target
                    for between in range(2 * target + 3, index - 2, 2):
                        mapping[between] = target
        old[:size] = mapping[:size]
        if mapping[size - 1] < 0:
            self.mapping_size = size = size - 1
        used_horizontal = False
        for index in range(size):
            target = mapping[index]
            if target < 0:
                row.append((" ", None))
            elif 2 * target == index:
                row.append(("|", self.new_columns[target][1]))
            elif target == horizontal_target and index != horizontal - 1:
                if index != 2 * target + 3:
                    mapping[index] = -1
                used_horizontal = True
                row.append(("_", self.new_columns[target][1]))
            else:
                if used_horizontal and index < horizontal:
                    mapping[index] = -1
                row.append(("/", self.new_columns[target][1]))
        if self._mapping_settled():
            self._set_state(_PADDING)


def graph_cells(
    commits: Sequence[tuple[str, Sequence[str]]],
) -> Iterator[tuple[list[Cell], str | None]]:
    """Yield the colored rows of :func:`graph_rows` (a commit's row carries its id)."""
    graph = _GitGraph()
    for commit_id, parents in commits:
        graph.update(commit_id, parents)
        while True:
            row, is_commit = graph.next_row()
            yield row, commit_id if is_commit else None
            if is_commit:
                break
        while not graph.finished:
            yield graph.next_row()[0], None


def graph_rows(commits: Sequence[tuple[str, Sequence[str]]]) -> list[tuple[str, str | None]]:
    """Lay out commits as ASCII rows exactly like ``git log --graph``.

    ``commits`` are ``(id, parents)`` in display order (see :func:`graph_order`); parents that
    are never shown keep their lines open to the bottom, as git's do after ``-n``. Returns
    ``(row, commit_id)`` pairs: a commit's row is padded so the text after it lines up (``*   ``
    for a merge), connector rows carry ``None`` and no trailing spaces.
    """
    rows: list[tuple[str, str | None]] = []
    for cells, commit_id in graph_cells(commits):
        row = "".join(char for char, _ in cells)
        rows.append((row, commit_id) if commit_id is not None else (row.rstrip(), None))
    return rows


def graph_text(cells: Sequence[Cell], keep_padding: bool) -> Styled:
    """A row of :func:`graph_cells` in its lane colors (trailing blanks dropped unless kept)."""
    text = Styled()
    if not keep_padding:
        while cells and cells[-1][0] == " ":
            cells = cells[:-1]
    for char, color in cells:
        if char == "*":
            text.append(char, style="bold")
        elif color is None:
            text.append(char)
        else:
            text.append(char, style=LANE_COLORS[color])
    return text


__all__ = ["LANE_COLORS", "Cell", "graph_cells", "graph_order", "graph_rows", "graph_text"]

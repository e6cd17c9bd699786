"""A prolly list: a content-defined B-tree of item ids (the conversation's message ids).

Node boundaries depend only on the entries themselves: a node ends after an entry whose id has
its low ``BOUNDARY_BITS`` bits zero (average fan-out 8), or after ``MAX_ENTRIES`` entries. So
the same list always has the same root, however it was built (history independence); appending
k items rewrites only the rightmost path (k items + O(log n) nodes); two lists that share a
prefix share every node of that prefix; and a diff skips equal, aligned subtrees.

Encoded nodes are written into an ``out`` dict (id -> bytes) the caller persists: exactly the
new nodes the returned root reaches.

Every walk is iterative, and checks that each child sits one level below its parent and holds
as many items as its parent says: a damaged or crafted store gives ``CorruptObject``, never
unbounded recursion or a loop (levels strictly decrease on every path).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import CorruptObject
from ..hashing import ObjectId, to_hex
from ..objects import ListNode, encode_with_id
from .reader import ObjectReader

BOUNDARY_BITS = 3
_MASK = (1 << BOUNDARY_BITS) - 1
MAX_ENTRIES = 64


Values = Sequence[bytes | None]
"""The values of leaf entries (a packed leaf's ``values``): a document's msgpack, or ``None``."""

ValueLookup = Callable[[Sequence[ObjectId]], Values]
"""Finds the values of items held by an unpacked (format 1) leaf, to pack them (format 2)."""


def _chunk(
    level: int, ids: Sequence[ObjectId], counts: Sequence[int], values: Values | None = None
) -> list[ListNode]:
    """Cut one level's entries into nodes by the content-defined boundary rule.

    With ``values`` (level 0 only) the nodes are packed leaves holding them.
    """
    nodes: list[ListNode] = []
    start = 0
    limit = MAX_ENTRIES - 1
    for i, entry in enumerate(ids):
        if not entry[-1] & _MASK or i - start >= limit:
            end = i + 1
            nodes.append(_node(level, ids, counts, values, start, end))
            start = end
    if start < len(ids):
        nodes.append(_node(level, ids, counts, values, start, len(ids)))
    return nodes


def _node(
    level: int,
    ids: Sequence[ObjectId],
    counts: Sequence[int],
    values: Values | None,
    start: int,
    end: int,
) -> ListNode:
    if values is None:
        return ListNode(level, tuple(ids[start:end]), tuple(counts[start:end]))
    return ListNode(0, tuple(ids[start:end]), (), tuple(values[start:end]))


class _Builder:
    """Encodes nodes into ``out`` and remembers fresh nodes so they need no re-read."""

    def __init__(self, reader: ObjectReader | None, out: dict[ObjectId, bytes]) -> None:
        self.reader = reader
        self.out = out
        self.fresh: dict[ObjectId, ListNode] = {}

    def store(self, node: ListNode) -> tuple[ObjectId, int]:
        object_id, data = encode_with_id(node)
        self.out[object_id] = data
        self.fresh[object_id] = node
        return object_id, node.total

    def node(self, object_id: ObjectId) -> ListNode:
        fresh = self.fresh.get(object_id)
        if fresh is not None:
            return fresh
        assert self.reader is not None
        return load_node(self.reader, object_id)

    def finish(self, produced: list[ListNode], packed: bool = False) -> ObjectId:
        """Stack levels until one node remains, collapse single-entry roots, return the root."""
        root_id = self._root(produced, packed)
        if self.reader is not None:
            for object_id, node in self.fresh.items():
                self.reader.remember(object_id, node)
        return root_id

    def _root(self, produced: list[ListNode], packed: bool = False) -> ObjectId:
        while True:
            if not produced:
                return self.store(ListNode(0, (), (), () if packed else None))[0]
            if len(produced) == 1:
                node = produced[0]
                root_id: ObjectId | None = None
                while node.level > 0 and len(node.ids) == 1:
                    if root_id is not None:
                        self._drop(root_id)
                    root_id = node.ids[0]
                    node = self.node(root_id)
                return self.store(node)[0] if root_id is None else root_id
            level = produced[0].level + 1
            refs = [self.store(n) for n in produced]
            produced = _chunk(level, [r[0] for r in refs], [r[1] for r in refs])

    def _drop(self, object_id: ObjectId) -> None:
        # A splice stores each new node when its parent needs the id, before it knows the
        # tree's final height. When the tree shrinks, the single-entry nodes left above the new
        # root belong to no tree: they must not be written (issue 8, section 6).
        if self.fresh.pop(object_id, None) is not None:
            del self.out[object_id]


def closed_length(ids: Sequence[ObjectId]) -> int:
    """Return how many leading ``ids`` fill closed leaves, chunking from a leaf start.

    A leaf is closed when it ends at a boundary entry or reaches ``MAX_ENTRIES``; what follows
    the last closed leaf is the open tail a snapshot keeps inline.
    """
    closed = 0
    start = 0
    limit = MAX_ENTRIES - 1
    for i, entry in enumerate(ids):
        if not entry[-1] & _MASK or i - start >= limit:
            closed = start = i + 1
    return closed


def load_node(reader: ObjectReader, object_id: ObjectId) -> ListNode:
    """Load a list node, raising ``CorruptObject`` if the id names something else."""
    node = reader.load(object_id)
    if not isinstance(node, ListNode):
        raise CorruptObject(to_hex(object_id), f"expected a list node, found {type(node).__name__}")
    return node


def _check_child(child_id: ObjectId, child: object, level: int, count: int | None) -> ListNode:
    """Return ``child`` if it is a list node at ``level`` holding ``count`` items."""
    if not isinstance(child, ListNode):
        raise CorruptObject(to_hex(child_id), f"expected a list node, found {type(child).__name__}")
    if child.level != level:
        raise CorruptObject(
            to_hex(child_id), f"a list node at level {child.level} sits where level {level} belongs"
        )
    if count is not None and child.total != count:
        raise CorruptObject(
            to_hex(child_id),
            f"a list node holds {child.total} items where its parent counts {count}",
        )
    return child


def _load_child(reader: ObjectReader, parent: ListNode, index: int) -> ListNode:
    """Load ``parent``'s child at ``index``, checking its level and item count."""
    child_id = parent.ids[index]
    return _check_child(child_id, reader.load(child_id), parent.level - 1, parent.counts[index])


def _locate(node: ListNode, pos: int) -> tuple[int, int]:
    """Return (child index, position inside that child) of item ``pos`` of an inner node."""
    counts = node.counts
    idx = 0
    last = len(counts) - 1
    while idx < last and pos >= counts[idx]:
        pos -= counts[idx]
        idx += 1
    return idx, pos


def build(
    ids: Sequence[ObjectId],
    out: dict[ObjectId, bytes],
    reader: ObjectReader | None = None,
    values: Values | None = None,
) -> ObjectId:
    """Build the prolly list of ``ids`` from scratch; return its root id.

    With ``values`` (one per id) the leaves are packed: they hold the values themselves.
    """
    return _Builder(reader, out).finish(_chunk(0, ids, (), values), values is not None)


def empty(out: dict[ObjectId, bytes], packed: bool = False) -> ObjectId:
    """Return the root id of the empty list (and encode it into ``out``)."""
    return build((), out, values=() if packed else None)


def splice(
    reader: ObjectReader,
    root: ObjectId,
    keep: int,
    new_ids: Sequence[ObjectId],
    out: dict[ObjectId, bytes],
    new_values: Values | None = None,
    lookup: ValueLookup | None = None,
) -> ObjectId:
    """Return the root of ``list(root)[:keep] + new_ids``, rewriting only the path at ``keep``.

    Cost: O(len(new_ids) + log n) node encodes. The result is identical to :func:`build` of the
    same items, because every node left of the path starts and ends where a fresh build would.
    With ``new_values`` the rewritten leaves are packed; ``lookup`` gives the values of kept
    items whose leaf is not packed yet.
    """
    builder = _Builder(reader, out)
    node = load_node(reader, root)
    if not 0 <= keep <= node.total:
        raise IndexError(f"keep={keep} is outside a list of {node.total} items")
    path: list[tuple[ListNode, int]] = []
    pos = keep
    while node.level > 0:
        idx, pos = _locate(node, pos)
        path.append((node, idx))
        node = _load_child(reader, node, idx)
    values: list[bytes | None] | None = None
    if new_values is not None:
        kept: Values
        if node.values is not None:
            kept = node.values[:pos]
        elif lookup is not None:
            kept = lookup(node.ids[:pos])
        else:
            raise ValueError("packing an unpacked leaf needs a value lookup")
        values = [*kept, *new_values]
    produced = _chunk(0, [*node.ids[:pos], *new_ids], (), values)
    for parent, idx in reversed(path):
        refs = [builder.store(n) for n in produced]
        produced = _chunk(
            parent.level,
            [*parent.ids[:idx], *(r[0] for r in refs)],
            [*parent.counts[:idx], *(r[1] for r in refs)],
        )
    return builder.finish(produced, new_values is not None)


def length(reader: ObjectReader, root: ObjectId) -> int:
    """Return the number of items in the list."""
    return load_node(reader, root).total


def get(reader: ObjectReader, root: ObjectId, index: int) -> ObjectId:
    """Return the item id at ``index`` (negative indexes count from the end)."""
    node = load_node(reader, root)
    total = node.total
    if index < 0:
        index += total
    if not 0 <= index < total:
        raise IndexError(f"index {index} is outside a list of {total} items")
    while node.level > 0:
        idx, index = _locate(node, index)
        node = _load_child(reader, node, idx)
    return node.ids[index]


def items_from(reader: ObjectReader, root: ObjectId, start: int) -> list[ObjectId]:
    """Return the item ids from ``start`` to the end, reading only the needed subtrees."""
    node = load_node(reader, root)
    if start <= 0:
        return _items_below(reader, root, node)
    total = node.total
    if start >= total:
        return []
    # Walk down to the leaf holding ``start``, noting the subtrees right of the path.
    right: list[list[ListNode]] = []
    pos = start
    while node.level > 0:
        idx, pos = _locate(node, pos)
        right.append(_load_children(reader, [node], idx + 1))
        node = _load_child(reader, node, idx)
    result = list(node.ids[pos:])
    for subtrees in reversed(right):
        while subtrees and subtrees[0].level > 0:
            subtrees = _load_children(reader, subtrees)
        result.extend(i for n in subtrees for i in n.ids)
    _check_total(root, total - start, len(result))
    return result


def items(reader: ObjectReader, root: ObjectId) -> list[ObjectId]:
    """Return every item id in order, reading one batch of nodes per tree level."""
    return _items_below(reader, root, load_node(reader, root))


def _items_below(reader: ObjectReader, root: ObjectId, node: ListNode) -> list[ObjectId]:
    return [i for n in _leaves_below(reader, root, node) for i in n.ids]


def child_ids(reader: ObjectReader, root: ObjectId) -> Sequence[ObjectId]:
    """Return the ids of an inner node's children (none for a leaf), for reading ahead."""
    node = load_node(reader, root)
    return node.ids if node.level > 0 else ()


def leaves(reader: ObjectReader, root: ObjectId) -> list[ListNode]:
    """Return every leaf in order (packed leaves carry their items' values), one batch a level."""
    return _leaves_below(reader, root, load_node(reader, root))


def _leaves_below(reader: ObjectReader, root: ObjectId, node: ListNode) -> list[ListNode]:
    nodes = [node]
    while nodes[0].level > 0:
        nodes = _load_children(reader, nodes)
    _check_total(root, node.total, sum(len(n.ids) for n in nodes))
    return nodes


def _check_total(root: ObjectId, counted: int, found: int) -> None:
    # One comparison per read instead of one per node: inner counts that lie show up here.
    if counted != found:
        raise CorruptObject(
            to_hex(root), f"the list holds {found} items where its nodes count {counted}"
        )


def _load_children(
    reader: ObjectReader, nodes: Sequence[ListNode], skip: int = 0
) -> list[ListNode]:
    """Load the children of same-level ``nodes`` in one batch (past ``skip`` of a single one).

    Checks each child's kind and level, which is what makes every walk end; item counts are
    checked where positions are computed from them (get, splice, items_from, diff).
    """
    if len(nodes) == 1:
        ids: Sequence[ObjectId] = nodes[0].ids[skip:]
    else:
        ids = [i for node in nodes for i in node.ids]
    loaded = reader.load_many(ids)
    level = nodes[0].level - 1
    children = [loaded.get(i) for i in ids]
    for child_id, child in zip(ids, children):
        if type(child) is not ListNode or child.level != level:
            _check_child(child_id, child, level, None)
    return children  # type: ignore[return-value]


def node_ids(reader: ObjectReader, root: ObjectId) -> set[ObjectId]:
    """Return the ids of every node of the tree (not the items)."""
    found = {root}
    nodes = [load_node(reader, root)]
    while nodes[0].level > 0:
        found.update(c for n in nodes for c in n.ids)
        nodes = _load_children(reader, nodes)
    return found


@dataclass(frozen=True, slots=True)
class ItemChange:
    """One position where two lists differ: ``old``/``new`` is ``None`` when absent."""

    index: int
    old: ObjectId | None
    new: ObjectId | None


@dataclass(frozen=True, slots=True)
class ListDiff:
    """The positional difference of two lists and what it cost to compute."""

    common_prefix: int
    old_length: int
    new_length: int
    changes: tuple[ItemChange, ...]
    nodes_visited: int


_ITEM = -1  # level marker of a leaf entry in the diff walk


def diff(reader: ObjectReader, old_root: ObjectId, new_root: ObjectId) -> ListDiff:
    """Compare two lists position by position, skipping equal aligned subtrees."""
    visited = 0

    def expand(queue: deque[tuple[ObjectId, int, int]]) -> None:
        nonlocal visited
        object_id, level, count = queue.popleft()
        node = _check_child(object_id, reader.load(object_id), level, count)
        visited += 1
        if node.level == 0:
            spans = [(i, _ITEM, 1) for i in node.ids]
        else:
            spans = [(c, node.level - 1, n) for c, n in zip(node.ids, node.counts)]
        queue.extendleft(reversed(spans))

    old_node = load_node(reader, old_root)
    new_node = load_node(reader, new_root)
    visited += 2
    qa: deque[tuple[ObjectId, int, int]] = deque([(old_root, old_node.level, old_node.total)])
    qb: deque[tuple[ObjectId, int, int]] = deque([(new_root, new_node.level, new_node.total)])
    changes: list[ItemChange] = []
    pos = 0
    while qa and qb:
        a, b = qa[0], qb[0]
        if a[0] == b[0] and a[1] == b[1]:
            qa.popleft()
            qb.popleft()
            pos += a[2]
        elif a[1] == _ITEM and b[1] == _ITEM:
            qa.popleft()
            qb.popleft()
            changes.append(ItemChange(pos, a[0], b[0]))
            pos += 1
        elif a[1] >= b[1]:
            expand(qa)
        else:
            expand(qb)
    for queue, is_old in ((qa, True), (qb, False)):
        while queue:
            if queue[0][1] == _ITEM:
                item = queue.popleft()[0]
                changes.append(
                    ItemChange(pos, item, None) if is_old else ItemChange(pos, None, item)
                )
                pos += 1
            else:
                expand(queue)
    old_total, new_total = old_node.total, new_node.total
    first = changes[0].index if changes else min(old_total, new_total)
    return ListDiff(first, old_total, new_total, tuple(changes), visited)


def prefix_length(a: Sequence[ObjectId], b: Sequence[ObjectId]) -> int:
    """Return the length of the common prefix of two id sequences (C-speed comparisons)."""
    low, high = 0, min(len(a), len(b))
    if a[:high] == b[:high]:
        return high
    while low < high:  # invariant: a[:low] == b[:low] and the answer is at most high
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low

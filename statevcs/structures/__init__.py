"""Merkle structures built from objects: prolly lists, maps and chunked large values."""

from .reader import ObjectReader

__all__ = ["ObjectReader"]

"""BDMA: the bridge DMA that copies line/surface-repeated blocks between memories."""

from .engine import BdmaEngine

__all__ = ["BdmaEngine"]

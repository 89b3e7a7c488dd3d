"""Horcrux Hunt: the rules engine, seat views, brains and memory layers (the Lambda layer)."""

__version__ = "0.1.0"

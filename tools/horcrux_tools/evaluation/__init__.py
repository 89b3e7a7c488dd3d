"""The memory experiment, measured: every Harry architecture against each Voldemort on
the same seeds (`horcrux evaluate`). `runner` plays and measures, `metrics` holds the pure
measures (failure modes, calibration, latency model), `report` aggregates and renders
markdown and JSON, `plots` draws the figures (matplotlib, imported lazily)."""

from horcrux.agents import adversaries as adversaries  # registers the stronger Voldemorts

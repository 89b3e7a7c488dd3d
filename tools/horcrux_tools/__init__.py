"""Horcrux Hunt's tools (distribution `horcrux-tools`): the `horcrux` CLI, the local server
and play (`local/`), simulation, self-play, evaluation, and ECHO's seasons and ablation.

They depend on the runtime (`horcrux`, distribution `horcrux-hunt`); the runtime never
imports them, and the Lambda layer is built from the runtime's wheel alone.
"""

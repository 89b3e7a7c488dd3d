"""ECHO's experiments: a season of games with memory on and off, and the ablation."""

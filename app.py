#!/usr/bin/env python3
"""The CDK app (`npx cdk synth` / `npx cdk deploy` run it through cdk.json).

It builds the Lambda layers first if needed (infra/build_layer.py, no Docker), then
synthesises the one stack, environment-agnostic: nothing here calls AWS.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT), str(ROOT / "shared")]  # infra/ and horcrux (no install needed)

from infra.stack import build_app  # noqa: E402

if __name__ == "__main__":
    app, _ = build_app()
    app.synth()

"""The Lambda layers, built without Docker by `infra/build_layer.py` (at synth time).

`core` (the `horcrux` package, pydantic, aws-lambda-powertools, numpy) goes on every
function; `llm` (the Anthropic SDK and the dependencies it adds) only on the AI turn
functions. Both for python3.13 on arm64.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra import build_layer

RUNTIME = lambda_.Runtime.PYTHON_3_13
ARCHITECTURE = lambda_.Architecture.ARM_64


class Layers(Construct):
    """The two layer versions, from freshly built asset directories."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        paths = build_layer.build(build_layer.LAMBDA)
        self.core = self._layer(
            "Core",
            paths["core"],
            "horcrux + pydantic, aws-lambda-powertools, numpy (arm64, py3.13)",
        )
        self.llm = self._layer(
            "Anthropic", paths["llm"], "the Anthropic SDK for the LLM brains (arm64, py3.13)"
        )

    def _layer(self, construct_id: str, path: Path, description: str) -> lambda_.LayerVersion:
        return lambda_.LayerVersion(
            self,
            construct_id,
            code=lambda_.Code.from_asset(str(path)),
            description=description,
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            removal_policy=RemovalPolicy.DESTROY,
        )

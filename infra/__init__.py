"""The Horcrux Hunt CDK app: storage, api, turns, monitoring (constructs) in one stack.

Importing the package silences jsii's notice about the machine's Node.js version (20), which
would otherwise be printed by every synth, before anything imports `aws_cdk`.
"""

import os

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

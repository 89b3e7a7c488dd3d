"""Local play: the API on a laptop (`horcrux serve`) and a terminal client (`horcrux play`).

* `moto_server`: an embedded moto DynamoDB on 127.0.0.1 (or the user's own endpoint from
  `AWS_ENDPOINT_URL_DYNAMODB`), with the tables the CDK stack creates.
* `server`: a `ThreadingHTTPServer` that turns each request into an API Gateway v2 event,
  calls the API Lambda's handler, and plays AI turns in process through the same record
  handler the stream-driven turn Lambdas run.
* `client`: a stdlib HTTP client of the API; `play`: the terminal UI on top of it.
"""

from horcrux_tools.local.client import ApiError, ApiUnavailable, HorcruxClient

__all__ = ["ApiError", "ApiUnavailable", "HorcruxClient"]

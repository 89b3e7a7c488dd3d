"""The AI-turn Lambdas' record handler: one stream record -> one `play_ai_turn` call.

The events table's stream (NEW_IMAGE) carries every event; the `harry_turn` and
`voldemort_turn` functions are subscribed with a filter on the event item's `next_ai`
attribute, so each gets only the records after which its seat must act (docs/API.md).
A record is idempotent to replay: `play_ai_turn` skips a game that moved past its seq.
`report_turn` is what both functions log and emit of each turn's outcome.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from horcrux.models import Seat
from horcrux.service import GameService, TurnOutcome, TurnRequest
from horcrux.store.mapping import game_id_of
from horcrux.store.port import SEATS

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger, Metrics

BRAIN_REPLACED_METRIC = "AiBrainReplaced"
"""A turn Lambda's metric: a seat's stored brain no longer builds, its default played."""
DEADLINE_MARGIN_S = 2.0
"""Kept from the Lambda's remaining time for the commit and the response."""


def turn_request(image: Mapping[str, Any]) -> TurnRequest | None:
    """The AI turn an event item asks for (`next_ai`), or None if it asks for none.

    `image` is a stream record's NewImage, either low-level (`{"pk": {"S": ...}}`) or
    deserialised (`{"pk": "GAME#x", "seq": Decimal(3)}`, as Powertools gives it).
    """

    def plain(value: Any) -> Any:
        if isinstance(value, Mapping) and len(value) == 1:
            ((kind, inner),) = value.items()
            if kind in ("S", "N"):
                return inner
        return value

    seat = plain(image.get("next_ai"))
    if seat not in SEATS:
        return None
    pk, seq = plain(image.get("pk")), plain(image.get("seq"))
    if not isinstance(pk, str) or seq is None:
        raise ValueError(f"not an event item: pk={pk!r} seq={seq!r}")
    number = Decimal(str(seq))
    if number != number.to_integral_value():
        raise ValueError(f"not an event seq: {seq!r}")
    return TurnRequest(game_id=game_id_of(pk), seq=int(number), seat=seat)


def filter_pattern(seat: Seat) -> dict[str, Any]:
    """The event-source-mapping filter of a seat's turn function (CDK: FilterCriteria)."""
    return {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"next_ai": {"S": [seat]}}}}


def turn_record_handler(
    service: GameService,
    seat: Seat,
    *,
    margin_s: float = DEADLINE_MARGIN_S,
    on_outcome: Callable[[TurnOutcome], None] | None = None,
) -> Callable[..., dict[str, Any]]:
    """A Powertools `BatchProcessor` record handler playing `seat`'s AI turns.

    It raises (the record is reported as a batch item failure and retried) only if the
    turn could not be decided or committed; records that ask for no turn of this seat,
    or for a turn already played, succeed without doing anything.
    """

    def record_handler(
        record: DynamoDBRecord, lambda_context: LambdaContext | None = None
    ) -> dict[str, Any]:
        stream = record.dynamodb
        image = stream.new_image if stream is not None else {}
        request = turn_request(image)
        if request is None or request.seat != seat:
            return {"status": "ignored", "reason": f"no {seat} AI turn in this record"}
        deadline: float | None = None
        if lambda_context is not None:
            deadline = lambda_context.get_remaining_time_in_millis() / 1000.0 - margin_s
        outcome = service.play_ai_turn(request.game_id, seat, request.seq, deadline_s=deadline)
        if on_outcome is not None:
            on_outcome(outcome)
        return outcome.as_dict()

    return record_handler


def report_turn(
    outcome: TurnOutcome,
    metrics: Metrics,
    logger: Logger,
    memory_metrics: Mapping[str, str],
) -> None:
    """What a turn Lambda reports of one turn: the outcome, logged; `AiTurn_<status>`;
    `AiTurnLatency` of a played turn; `AiBrainReplaced` when the seat's stored brain no
    longer builds (`outcome.replaced`: its default played); and one memory metric,
    `memory_metrics[kind]`, where `kind` is `outcome.memory` up to its first `:`
    (`rebuilt:stale` -> `rebuilt`). A memory status the map does not name emits no memory
    metric."""
    logger.info("ai turn", extra=outcome.as_dict())
    metrics.add_metric(name=f"AiTurn_{outcome.status}", unit=MetricUnit.Count, value=1)
    if outcome.status == "played":
        metrics.add_metric(
            name="AiTurnLatency", unit=MetricUnit.Milliseconds, value=outcome.seconds * 1000
        )
    if outcome.replaced is not None:
        metrics.add_metric(name=BRAIN_REPLACED_METRIC, unit=MetricUnit.Count, value=1)
    memory = memory_metrics.get((outcome.memory or "").split(":")[0])
    if memory is not None:
        metrics.add_metric(name=memory, unit=MetricUnit.Count, value=1)

"""DynamoDB: the events table (with its stream), the games table, the idempotency table.

All three on demand, encrypted with the AWS-managed key, with point-in-time recovery; the
events and games tables expire items on `ttl` (a game expires as a whole, docs/STORE.md), the
idempotency table on `expiration` (Powertools). The events table streams NEW_IMAGE to the
AI turn functions and the compaction.
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from infra import names
from infra.names import Settings


class Storage(Construct):
    """The three tables."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: Settings) -> None:
        super().__init__(scope, construct_id)
        kept = RemovalPolicy.RETAIN if settings.retain_data else RemovalPolicy.DESTROY
        self.events = self._table(
            "EventsTable",
            (names.EVENTS_PK, dynamodb.AttributeType.STRING),
            (names.EVENTS_SK, dynamodb.AttributeType.NUMBER),
            ttl=names.TTL_ATTRIBUTE,
            removal=kept,
            stream=dynamodb.StreamViewType.NEW_IMAGE,
        )
        self.games = self._table(
            "GamesTable",
            (names.GAMES_PK, dynamodb.AttributeType.STRING),
            (names.GAMES_SK, dynamodb.AttributeType.STRING),
            ttl=names.TTL_ATTRIBUTE,
            removal=kept,
        )
        self.games.add_global_secondary_index(
            index_name=names.LOBBY_INDEX,
            partition_key=dynamodb.Attribute(
                name=names.LOBBY_PK, type=dynamodb.AttributeType.STRING
            ),
            sort_key=dynamodb.Attribute(name=names.LOBBY_SK, type=dynamodb.AttributeType.STRING),
            projection_type=dynamodb.ProjectionType.INCLUDE,
            non_key_attributes=list(names.LOBBY_PROJECTION),
        )
        self.idempotency = self._table(
            "IdempotencyTable",
            (names.IDEMPOTENCY_PK, dynamodb.AttributeType.STRING),
            None,
            ttl=names.IDEMPOTENCY_TTL_ATTRIBUTE,
            removal=RemovalPolicy.DESTROY,  # 24-hour records: nothing worth keeping
        )

    def _table(
        self,
        construct_id: str,
        partition: tuple[str, dynamodb.AttributeType],
        sort: tuple[str, dynamodb.AttributeType] | None,
        *,
        ttl: str,
        removal: RemovalPolicy,
        stream: dynamodb.StreamViewType | None = None,
    ) -> dynamodb.Table:
        """On demand, AWS-managed encryption, point-in-time recovery, TTL on `ttl`."""
        return dynamodb.Table(
            self,
            construct_id,
            partition_key=dynamodb.Attribute(name=partition[0], type=partition[1]),
            sort_key=dynamodb.Attribute(name=sort[0], type=sort[1]) if sort else None,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute=ttl,
            stream=stream,
            removal_policy=removal,
        )

    @property
    def tables(self) -> dict[str, dynamodb.Table]:
        """The tables by the names `names.DYNAMO_ACTIONS` uses."""
        return {"games": self.games, "events": self.events, "idempotency": self.idempotency}

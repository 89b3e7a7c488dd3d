"""A move whose TransactWriteItems was sent and whose answer was lost (the database stalled
or the connection dropped after the request left): the API never says "nothing was
written" when it may have been. It sends the transaction again with the same
ClientRequestToken and reads back the event's write id: applied, the move's 200; still
unknown, a 503 `outcome_unknown` saying so, and a retry with the same Idempotency-Key
answers the committed move. Through the API Lambda's handler over moto DynamoDB, with the
client's TransactWriteItems made to lose its answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from api_fixtures import ApiClient, two_person_game
from botocore.exceptions import ReadTimeoutError

from horcrux.store import DynamoDbStore

pytestmark = pytest.mark.moto

MOVE = {"type": "search", "location": "azkaban"}


def lose_answers(api: ApiClient, plan: list[str]) -> list[str]:
    """Make the API's TransactWriteItems follow `plan`, one step per call: `apply-lose`
    (applied, then the answer is lost), `lose` (never reaches the database, the answer is
    lost), `ok` (as usual). Returns the list of steps taken."""
    client = api.handler.store.client
    real: Callable[..., Any] = client.transact_write_items
    taken: list[str] = []

    def transact(**kw: Any) -> Any:
        step = plan[len(taken)] if len(taken) < len(plan) else "ok"
        taken.append(step)
        assert kw.get("ClientRequestToken"), "every transaction carries a token"
        if step == "ok":
            return real(**kw)
        if step == "apply-lose":
            real(**kw)
        raise ReadTimeoutError(endpoint_url="http://dynamodb.local")

    client.transact_write_items = transact
    return taken


def events(dynamo: DynamoDbStore, game_id: str) -> list[int]:
    return [e.seq for e in dynamo.events(game_id).events]


def test_a_move_applied_before_its_answer_was_lost_answers_200(
    api: ApiClient, dynamo: DynamoDbStore
) -> None:
    game_id, token = two_person_game(api)
    before = dynamo.load(game_id)
    taken = lose_answers(api, ["apply-lose"])
    reply = api.call("POST", f"/games/{game_id}/moves", body=MOVE, token=token)
    assert reply.status == 200, reply.body
    assert taken == ["apply-lose", "ok"]  # sent once more: cancelled, its event found
    after = dynamo.load(game_id)
    assert after.version == before.version + 1 == reply.body["game"]["version"]
    assert after.phase == "voldemort"
    assert events(dynamo, game_id).count(reply.body["event"]["seq"]) == 1


def test_a_move_never_applied_before_its_answer_was_lost_is_applied_once(
    api: ApiClient, dynamo: DynamoDbStore
) -> None:
    game_id, token = two_person_game(api)
    before = dynamo.load(game_id)
    taken = lose_answers(api, ["lose"])
    reply = api.call("POST", f"/games/{game_id}/moves", body=MOVE, token=token)
    assert reply.status == 200, reply.body
    assert taken == ["lose", "ok"]
    assert dynamo.load(game_id).version == before.version + 1


def test_an_outcome_that_stays_unknown_is_said_and_the_keyed_retry_answers_the_move(
    api: ApiClient, dynamo: DynamoDbStore
) -> None:
    game_id, token = two_person_game(api)
    before = dynamo.load(game_id)
    taken = lose_answers(api, ["apply-lose", "lose"])
    key = {"idempotency-key": "move-1"}
    reply = api.call("POST", f"/games/{game_id}/moves", body=MOVE, token=token, headers=key)
    assert reply.status == 503, reply.body
    assert reply.body["error"] == "store_unavailable"
    assert reply.body["reason"] == "outcome_unknown"
    assert "may or may not have been applied" in reply.body["message"]
    assert "same Idempotency-Key" in reply.body["message"]
    assert "Retry-After" in reply.headers
    assert taken == ["apply-lose", "lose"]
    # it was applied (the first send): the retry with the same key answers that move
    assert dynamo.load(game_id).version == before.version + 1
    retry = api.call("POST", f"/games/{game_id}/moves", body=MOVE, token=token, headers=key)
    assert retry.status == 200, retry.body
    assert retry.body["seat"] == "harry"
    assert retry.body["event"]["seq"] == before.state.seq + 1
    assert retry.body["event"]["action"]["location"] == "azkaban"
    assert retry.body["game"]["version"] == before.version + 1
    assert taken == ["apply-lose", "lose"]  # nothing sent again
    # a replay of the key now answers the stored response, byte for byte
    again = api.call("POST", f"/games/{game_id}/moves", body=MOVE, token=token, headers=key)
    assert again.raw == retry.raw
    # another move under the same key is not that write: refused as usual
    other = {"type": "search", "location": "hogwarts"}
    refused = api.call("POST", f"/games/{game_id}/moves", body=other, token=token, headers=key)
    assert refused.status == 422 and refused.body["error"] == "idempotency_key_reused"
    # without a key the retry is refused as what it is: the game has moved on
    bare = api.call("POST", f"/games/{game_id}/moves", body=MOVE, token=token)
    assert bare.status == 409 and bare.body["error"] == "not_your_turn", bare.body
    assert dynamo.load(game_id).version == before.version + 1


def test_a_keyed_retry_of_a_move_that_was_never_applied_plays_it(
    api: ApiClient, dynamo: DynamoDbStore
) -> None:
    game_id, token = two_person_game(api)
    before = dynamo.load(game_id)
    lose_answers(api, ["lose", "lose"])
    key = {"idempotency-key": "move-2"}
    reply = api.call("POST", f"/games/{game_id}/moves", body=MOVE, token=token, headers=key)
    assert reply.status == 503 and reply.body["reason"] == "outcome_unknown", reply.body
    assert dynamo.load(game_id).version == before.version  # truly not applied
    retry = api.call("POST", f"/games/{game_id}/moves", body=MOVE, token=token, headers=key)
    assert retry.status == 200, retry.body
    assert dynamo.load(game_id).version == before.version + 1

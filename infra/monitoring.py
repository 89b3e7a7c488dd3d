"""Alarms, their SNS topic and a dashboard.

Every alarm fires on one 5-minute period, treats missing data as fine and notifies the topic
(subscribe an address with `-c horcrux:alarmEmail=...`):

- per function: errors (>= 1), throttles (>= 1), p99 duration >= 80% of its timeout;
- the HTTP API: 5xx responses (>= 1);
- per table: read + write throttle events (>= 1);
- per stream consumer: iterator age (>= 60 s) and its failed-records queue's depth (>= 1);
- the compaction's `ReplayMismatch` metric (>= 1: a snapshot differed from its log's replay);
- the compaction's `MemoryLeakPrevented` metric (>= 1: a consolidation would have dropped too
  much of a scope's memory at once; what it would drop is quarantined for review, docs/ECHO.md);
- the compaction's `MemoryEvicted` metric (>= 1: a level's budget evicted items);
- the compaction's `MemoryCorrectionConflict` metric (>= 1: games contradict an operator's
  correction; confirm or retire it);
- per turn function (harry_turn, voldemort_turn): its `MemoryPinUnreadable` metric (>= 1: a
  game's memory pin did not decode; the turn played without memory, the pin is kept in the
  game's snapshot for review) and its `AiBrainReplaced` metric (>= 1: a seat's stored brain
  spec no longer builds, so the seat's default brain played; the stored spec is kept).

The dashboard also graphs an AI Harry's memory start-ups (`MemoryRead`, `MemoryRebuilt`,
`MemoryUnavailable`, from the harry_turn function) and the memory pins (`MemoryPinUnreadable`
of both turn functions, `MemoryCopied` of the voldemort_turn function: a Voldemort's copy of
Harry's brain adopted the pin). A rebuild is not alarmed: a schema change legitimately
rebuilds every scope once.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import names
from infra.api import HttpApi
from infra.functions import HorcruxFunction, pascal
from infra.names import Settings
from infra.storage import Storage

PERIOD = Duration.seconds(names.ALARM_PERIOD_S)


def service_metric(name: str, service: str) -> cloudwatch.Metric:
    """A handler's EMF metric (Powertools: namespace + the `service` dimension), summed."""
    return cloudwatch.Metric(
        namespace=names.METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": service},
        statistic="Sum",
        period=PERIOD,
    )


def replay_mismatch_metric() -> cloudwatch.Metric:
    """The compaction's `ReplayMismatch` metric."""
    return service_metric(names.REPLAY_MISMATCH_METRIC, names.COMPACTION_SERVICE)


def memory_leak_metric() -> cloudwatch.Metric:
    """The compaction's `MemoryLeakPrevented` metric (ECHO's leaky bucket)."""
    return service_metric(names.MEMORY_LEAK_METRIC, names.COMPACTION_SERVICE)


def memory_evicted_metric() -> cloudwatch.Metric:
    """The compaction's `MemoryEvicted` metric (items a level's budget evicted)."""
    return service_metric(names.MEMORY_EVICTED_METRIC, names.COMPACTION_SERVICE)


def memory_conflict_metric() -> cloudwatch.Metric:
    """The compaction's `MemoryCorrectionConflict` metric (a contradicted correction)."""
    return service_metric(names.MEMORY_CONFLICT_METRIC, names.COMPACTION_SERVICE)


def memory_startup_metrics() -> list[cloudwatch.IMetric]:
    """An AI Harry's first-turn memory reads, good and rebuilt (the harry_turn function)."""
    return [service_metric(n, names.HARRY_TURN_SERVICE) for n in names.MEMORY_STARTUP_METRICS]


def memory_pin_metrics() -> list[cloudwatch.IMetric]:
    """The memory pins of both turn functions: unreadable (each), copied (Voldemort's)."""
    unreadable = [
        service_metric(names.MEMORY_PIN_METRIC, service)
        for service in names.PIN_ALARM_SERVICES.values()
    ]
    return [
        *unreadable,
        service_metric(names.MEMORY_COPIED_METRIC, names.VOLDEMORT_TURN_SERVICE),
    ]


class Monitoring(Construct):
    """The alarms (`self.alarms`, by construct id), the topic and the dashboard."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        storage: Storage,
        api: HttpApi,
        functions: list[HorcruxFunction],
        dead_letter_queues: dict[str, sqs.Queue],
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(
            self, "AlarmTopic", display_name="Horcrux Hunt alarms", enforce_ssl=True
        )
        if settings.alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(settings.alarm_email))
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        by_name = {fn.spec.name: fn for fn in functions}

        for fn in functions:
            stem = pascal(fn.spec.name)
            lam = fn.function
            self._alarm(
                f"{stem}Errors",
                lam.metric_errors(period=PERIOD, statistic="Sum"),
                1,
                f"the {fn.spec.name} function raised",
            )
            self._alarm(
                f"{stem}Throttles",
                lam.metric_throttles(period=PERIOD, statistic="Sum"),
                1,
                f"the {fn.spec.name} function was throttled",
            )
            self._alarm(
                f"{stem}DurationP99",
                lam.metric_duration(period=PERIOD, statistic="p99"),
                int(fn.spec.timeout_s * 1000 * names.DURATION_ALARM_SHARE),
                f"the {fn.spec.name} function's p99 duration nears its "
                f"{fn.spec.timeout_s} s timeout",
            )

        self._alarm(
            "Api5xx",
            api.api.metric_server_error(period=PERIOD, statistic="Sum"),
            names.API_5XX_ALARM,
            "the HTTP API answered 5xx",
        )
        for key, table in storage.tables.items():
            throttles = cloudwatch.MathExpression(
                expression="reads + writes",
                using_metrics={
                    "reads": table.metric("ReadThrottleEvents", statistic="Sum", period=PERIOD),
                    "writes": table.metric("WriteThrottleEvents", statistic="Sum", period=PERIOD),
                },
                label=f"{key} throttle events",
                period=PERIOD,
            )
            self._alarm(
                f"{pascal(key)}TableThrottles", throttles, 1, f"the {key} table throttled requests"
            )
        for name, queue in dead_letter_queues.items():
            stem = pascal(name)
            self._alarm(
                f"{stem}IteratorAge",
                by_name[name].function.metric("IteratorAge", statistic="Maximum", period=PERIOD),
                names.ITERATOR_AGE_ALARM_MS,
                f"the {name} function lags behind the events stream",
            )
            self._alarm(
                f"{stem}FailedRecords",
                queue.metric_approximate_number_of_messages_visible(
                    statistic="Maximum", period=PERIOD
                ),
                names.DLQ_DEPTH_ALARM,
                f"the {name} function gave up on stream records (see its queue)",
            )
        self._alarm(
            "ReplayMismatch",
            replay_mismatch_metric(),
            1,
            "a finished game's snapshot differed from the replay of its events (repaired)",
        )
        self._alarm(
            names.MEMORY_LEAK_METRIC,
            memory_leak_metric(),
            1,
            "a cross-game memory consolidation would have dropped too much (quarantined)",
        )
        self._alarm(
            names.MEMORY_EVICTED_METRIC,
            memory_evicted_metric(),
            1,
            "the cross-game memory cap evicted items (a level over its budget)",
        )
        self._alarm(
            names.MEMORY_CONFLICT_METRIC,
            memory_conflict_metric(),
            1,
            "games contradict an operator's memory correction (confirm or retire it)",
        )
        for name, service in names.PIN_ALARM_SERVICES.items():
            self._alarm(
                f"{pascal(name)}{names.MEMORY_PIN_METRIC}",
                service_metric(names.MEMORY_PIN_METRIC, service),
                1,
                f"the {name} function met a memory pin that does not decode (kept; played "
                "without memory)",
            )
            self._alarm(
                f"{pascal(name)}{names.BRAIN_REPLACED_METRIC}",
                service_metric(names.BRAIN_REPLACED_METRIC, service),
                1,
                f"the {name} function met a seat whose stored brain no longer builds (kept; "
                "the seat's default brain played)",
            )
        self.dashboard = self._dashboard(storage, api, functions, dead_letter_queues)

    def _alarm(
        self, construct_id: str, metric: cloudwatch.IMetric, threshold: float, what: str
    ) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            metric=metric,
            threshold=threshold,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=f"Horcrux Hunt: {what}",
        )
        alarm.add_alarm_action(actions.SnsAction(self.topic))
        self.alarms[construct_id] = alarm
        return alarm

    def _dashboard(
        self,
        storage: Storage,
        api: HttpApi,
        functions: list[HorcruxFunction],
        dead_letter_queues: dict[str, sqs.Queue],
    ) -> cloudwatch.Dashboard:
        dashboard = cloudwatch.Dashboard(self, "Dashboard", default_interval=Duration.hours(3))

        def graph(title: str, metrics: list[cloudwatch.IMetric]) -> cloudwatch.GraphWidget:
            return cloudwatch.GraphWidget(title=title, left=metrics, width=8, height=6)

        dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(
                title="Alarms", alarms=list(self.alarms.values()), width=24, height=4
            )
        )
        dashboard.add_widgets(
            graph("API requests", [api.api.metric_count(period=PERIOD, statistic="Sum")]),
            graph(
                "API errors",
                [
                    api.api.metric_client_error(period=PERIOD, statistic="Sum"),
                    api.api.metric_server_error(period=PERIOD, statistic="Sum"),
                ],
            ),
            graph("API latency p99", [api.api.metric_latency(period=PERIOD, statistic="p99")]),
        )
        lams = [fn.function for fn in functions]
        dashboard.add_widgets(
            graph("Invocations", [f.metric_invocations(period=PERIOD) for f in lams]),
            graph("Errors", [f.metric_errors(period=PERIOD) for f in lams]),
            graph(
                "Duration p99", [f.metric_duration(period=PERIOD, statistic="p99") for f in lams]
            ),
        )
        consumers = [fn.function for fn in functions if fn.spec.name in dead_letter_queues]
        dashboard.add_widgets(
            graph(
                "Stream iterator age (max)",
                [f.metric("IteratorAge", statistic="Maximum", period=PERIOD) for f in consumers],
            ),
            graph(
                "Failed stream records (queued)",
                [
                    q.metric_approximate_number_of_messages_visible(period=PERIOD)
                    for q in dead_letter_queues.values()
                ],
            ),
            graph("Replay mismatches", [replay_mismatch_metric()]),
        )
        dashboard.add_widgets(
            graph("Memory start-ups (AI Harry)", memory_startup_metrics()),
            graph("Memory leaks prevented", [memory_leak_metric()]),
            graph("Memory pins (unreadable, copied)", memory_pin_metrics()),
        )
        dashboard.add_widgets(
            *(
                graph(
                    f"{key} table capacity",
                    [
                        table.metric_consumed_read_capacity_units(period=PERIOD),
                        table.metric_consumed_write_capacity_units(period=PERIOD),
                    ],
                )
                for key, table in storage.tables.items()
            )
        )
        return dashboard

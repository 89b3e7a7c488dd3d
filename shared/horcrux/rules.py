"""The rule set: every number of the game is a field, with two named presets.

`classic` has no allies (the evaluation's headline numbers); `standard` adds Ron,
Hermione and Dumbledore and is the default for play.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

LOCATIONS: tuple[str, ...] = (
    "hogwarts",
    "hogsmeade",
    "forbidden-forest",
    "diagon-alley",
    "knockturn-alley",
    "gringotts",
    "ministry-of-magic",
    "azkaban",
    "godrics-hollow",
    "little-hangleton",
    "malfoy-manor",
    "grimmauld-place",
    "shrieking-shack",
    "spinners-end",
    "the-burrow",
)

_DISPLAY_OVERRIDES = {"godrics-hollow": "Godric's Hollow", "spinners-end": "Spinner's End"}

AllyName = Literal["ron", "hermione", "dumbledore"]
ALLY_NAMES: tuple[AllyName, ...] = ("ron", "hermione", "dumbledore")


def display_name(slug: str) -> str:
    """Human name of a location slug: `diagon-alley` -> `Diagon Alley`."""
    return _DISPLAY_OVERRIDES.get(slug) or " ".join(
        w if w == "of" else w.capitalize() for w in slug.split("-")
    )


class Sensor(BaseModel):
    """A noisy detector: P(positive | responds) = d, P(positive | silent) = f."""

    model_config = ConfigDict(frozen=True)

    d: float = Field(gt=0.0, lt=1.0)
    f: float = Field(gt=0.0, lt=1.0)

    @model_validator(mode="after")
    def _informative(self) -> Sensor:
        if self.d <= self.f:
            raise ValueError("a sensor needs d > f to carry information")
        return self


class AllyRules(BaseModel):
    """One ally: how many locations one use looks at, its rest, its use limit."""

    model_config = ConfigDict(frozen=True)

    rest: int = Field(ge=0, description="turns the ally cannot be used after a use")
    max_uses: int | None = Field(default=None, ge=1, description="uses per game; None: unlimited")
    sensor: Sensor | None = Field(default=None, description="None: Harry's sensor (Ron)")


class RuleSet(BaseModel):
    """Every number of the rules (docs/RULES.md), so that variants stay one object away."""

    model_config = ConfigDict(frozen=True)

    name: str = "custom"
    locations: tuple[str, ...] = LOCATIONS
    horcruxes: int = Field(default=3, ge=1)
    max_turns: int = Field(default=50, ge=1)
    attacks: int = Field(default=7, ge=1)
    sensor: Sensor = Sensor(d=0.80, f=0.15)
    relocations: int = Field(default=3, ge=0)
    decoys: int = Field(default=3, ge=0)
    allies: dict[AllyName, AllyRules] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> RuleSet:
        if len(set(self.locations)) != len(self.locations):
            raise ValueError("locations must be distinct")
        if self.horcruxes >= len(self.locations):
            raise ValueError("there must be more locations than Horcruxes")
        for name, ally in self.allies.items():
            if name == "dumbledore" and ally.sensor is not None:
                raise ValueError("dumbledore reveals exactly; he takes no sensor")
        return self

    def sensor_of(self, ally: AllyName | None) -> Sensor:
        """The sensor used by Harry (ally None), Ron (Harry's) or Hermione (her own)."""
        if ally is None:
            return self.sensor
        rules = self.allies.get(ally)
        if rules is None or rules.sensor is None:
            return self.sensor
        return rules.sensor


CLASSIC = RuleSet(name="classic")
STANDARD = RuleSet(
    name="standard",
    allies={
        "ron": AllyRules(rest=4),
        "hermione": AllyRules(rest=3, sensor=Sensor(d=0.95, f=0.05)),
        "dumbledore": AllyRules(rest=10, max_uses=2),
    },
)
PRESETS: dict[str, RuleSet] = {"classic": CLASSIC, "standard": STANDARD}


def preset(name: str) -> RuleSet:
    """The named rule preset; raises KeyError naming the known presets."""
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown rules preset {name!r}; known: {', '.join(PRESETS)}") from None

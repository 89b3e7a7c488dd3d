"""Layer 2: belief maps (`BayesBelief`, the exact filter; `HeuristicBelief`, the seed map)."""

from horcrux.belief.base import BeliefMap, BeliefPoint
from horcrux.belief.bayes import MODES, AdversaryModel, BayesBelief
from horcrux.belief.heuristic import HeuristicBelief

__all__ = ["MODES", "AdversaryModel", "BayesBelief", "BeliefMap", "BeliefPoint", "HeuristicBelief"]

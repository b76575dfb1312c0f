"""What a solve ranks by: the objective names `solve --objective` takes.

Why an Enum of strings: the names travel from the CLI and the API into the solver and back into every result
(`objective` in the JSON, the text header); a str-valued Enum keeps them one spelling, while each member still
compares, formats and serialises as its plain name, so the output is the same as with bare strings.
"""
from __future__ import annotations

from enum import Enum


class Objective(str, Enum):
    """throughput: shortest projected step; memory: most headroom (smallest exact peak); fewest_gpus: fewest nodes
    (up to the count given) reaching a tokens/s target, each count solved for throughput."""

    throughput = "throughput"
    memory = "memory"
    fewest_gpus = "fewest-gpus"

    def __str__(self) -> str:  # the plain name in messages and f-strings, as the bare string it replaced
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


OBJECTIVE_NAMES = tuple(o.value for o in Objective)


def objective_name(objective) -> str:
    """The plain name of an Objective or of a string naming one (for messages: an Enum's repr is not its name)."""
    return objective.value if isinstance(objective, Objective) else objective

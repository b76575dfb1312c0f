"""Every generator of the fuzz suite by kind, and the mixture of kinds a long run draws (bench/fuzz.py)."""
from __future__ import annotations

from tests.helpers.fuzz.api_calls import api_case
from tests.helpers.fuzz.cases import model_file_case, profile_case, recipe_case, render_case, script_case, sweep_case
from tests.helpers.fuzz.choice import Case
from tests.helpers.fuzz.processes import concurrent_case, sigterm_case
from tests.helpers.fuzz.readers import bash_budget_case, hf_layers_case, stack_config_case
from tests.helpers.fuzz.writers import overwrite_case, summary_case, writer_case

GENERATORS = {"recipe": recipe_case, "script": script_case, "render": render_case, "profile": profile_case,
              "solve": model_file_case, "sweep": sweep_case,
              # the second round (issue 33): readers, writers, the API, racing and stopped processes
              "stack": stack_config_case, "hf_layers": hf_layers_case, "bash_budget": bash_budget_case,
              "writer": writer_case, "summary": summary_case, "overwrite": overwrite_case, "api": api_case,
              "concurrent": concurrent_case, "sigterm": sigterm_case}
# share of each kind in a mixed run: solve-like cases cost seconds each, the others tens of milliseconds
WEIGHTS = {"recipe": 25, "script": 20, "render": 8, "profile": 12, "solve": 4, "sweep": 2,
           "stack": 10, "hf_layers": 6, "bash_budget": 6, "writer": 8, "summary": 1, "overwrite": 6, "api": 4,
           "concurrent": 0.5, "sigterm": 0.5}
# seconds a case may take before it counts as a hang
LIMIT_S = {"recipe": 20, "script": 20, "render": 20, "profile": 20, "solve": 60, "sweep": 120, "stack": 20,
           "hf_layers": 20, "bash_budget": 20, "writer": 30, "summary": 90, "overwrite": 90, "api": 90,
           "concurrent": 120, "sigterm": 60}


def any_case(c) -> Case:
    scale = 2  # weights in half units
    r, acc = c.int(0, int(sum(WEIGHTS.values()) * scale) - 1), 0
    for kind, w in WEIGHTS.items():
        acc += w * scale
        if r < acc:
            return GENERATORS[kind](c)
    raise AssertionError("unreachable")

"""boundary.budget.InputBudget, boundary.expand.substitute_references and the string total of boundary.parse.check_shape:
what one input costs with everything it pulls in is bounded as a whole, and sized before it is built (issue 33)."""
import pytest

from boundary.budget import InputBudget
from boundary.errors import InputRefused
from boundary.expand import substitute_references
from boundary.limits import MAX_STRING_CHARS, MAX_YAML_NODES
from boundary.parse import NotYaml, load_yaml


def test_each_charge_refuses_one_past_its_limit_naming_the_input_and_the_place():
    budget = InputBudget("exp.yaml", max_files=2, max_bytes=10, max_values=5, max_expanded_chars=7)
    budget.charge_file("a")
    budget.charge_file("b")
    with pytest.raises(InputRefused, match=r"^m.yaml: extends 'c.yaml': exp.yaml names more than 2 files"):
        budget.charge_file("m.yaml: extends 'c.yaml'")
    budget.charge_bytes(10, "a")
    with pytest.raises(InputRefused, match=r"^b: the files exp.yaml reads hold over 10 bytes together"):
        budget.charge_bytes(1, "b")
    budget.charge_values(5, "a")
    assert budget.values_left() == 0
    with pytest.raises(InputRefused, match="over 5 YAML values"):
        budget.charge_values(1, "b")
    budget.charge_expansion(7, "k")
    with pytest.raises(InputRefused, match=r"^k2: \$\{NAME\} references in exp.yaml expand to over 7 bytes"):
        budget.charge_expansion(1, "k2")


def test_references_are_substituted_with_their_defaults_and_charged():
    budget = InputBudget("f")
    env = {"A": "1"}
    out = substitute_references("${A}-${B:two}-${C:}", lambda n, d: env.get(n, d), "k", budget)
    assert out == "1-two-" and budget.expanded_chars == len(out)
    assert substitute_references("no refs $A {B}", lambda n, d: "x", "k", budget) == "no refs $A {B}"
    assert budget.expanded_chars == len(out)  # text without a reference costs nothing


def test_a_result_past_one_strings_limit_is_refused_before_it_is_joined():
    calls = []

    def lookup(name, default):
        calls.append(name)
        return "x" * (MAX_STRING_CHARS // 2 + 1)

    budget = InputBudget("f")
    with pytest.raises(InputRefused, match=f"over {MAX_STRING_CHARS:,} characters"):
        substitute_references("${A}" * 1000, lookup, "k", budget)
    assert len(calls) == 2 and budget.expanded_chars == 0  # stopped at the second reference, nothing charged


def test_the_yaml_values_of_several_files_share_one_budget():
    budget = InputBudget("exp.yaml", max_values=12)
    load_yaml("a: 1\nb: 2\n", "recipe", "one.yaml", budget)  # mapping + 4 scalars
    assert budget.values == 5
    with pytest.raises(InputRefused, match=r"^two.yaml \(line \d+\): the files exp.yaml reads hold over 12 YAML values"):
        load_yaml("[" + ", ".join(["1"] * 20) + "]", "recipe", "two.yaml", budget)


def test_one_file_still_meets_its_own_value_limit_first():
    with pytest.raises(InputRefused, match=f"more than {MAX_YAML_NODES:,} YAML values"):
        load_yaml("[" + ",".join(["1"] * (MAX_YAML_NODES + 1)) + "]", "recipe", "f", InputBudget("f"))


def test_text_that_is_not_yaml_is_its_own_refusal():
    with pytest.raises(NotYaml):
        load_yaml("[1, 2", "recipe", "f")
    with pytest.raises(InputRefused) as deep:
        load_yaml("[" * 100 + "]" * 100, "recipe", "f")
    assert not isinstance(deep.value, NotYaml)  # a limit is never mistaken for plain text


def test_strings_repeated_by_aliases_stay_within_a_files_bytes():
    # 20 alias uses of a 60,000-character string: each limit of one value holds, together 1.2 MB > the 1 MiB a recipe
    # may hold; `str()` or a join of the value later would have built it
    text = 'a: &s "' + "x" * 60_000 + '"\nb: [' + ", ".join(["*s"] * 20) + "]\n"
    assert len(text) < 70_000
    with pytest.raises(InputRefused, match="over 1 MiB once aliases are expanded"):
        load_yaml(text, "recipe", "f")
    assert load_yaml('a: &s "' + "x" * 60_000 + '"\nb: [*s, *s]\n', "recipe", "f")["b"][1] == "x" * 60_000

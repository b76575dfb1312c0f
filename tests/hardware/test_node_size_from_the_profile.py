"""A node is the hardware profile's server or tray unless the user says otherwise: `solve` and `sweep` take the
profile's GPUs per node (GB200 NVL72: 4 per compute tray; H100 HGX: 8), and `check` warns when a node is said to
hold more GPUs than the part's server does."""
import shardplan
from hardware.profile import load_profile
from shardplan.sweep import sweep


def test_the_bundled_profiles_state_their_server_size():
    # NVIDIA GB200 NVL72: 18 compute trays of 4 GPUs (2 Grace + 4 Blackwell each); HGX H100 / B200: 8 GPUs
    assert load_profile("gb200-nvl72").gpus_per_node == 4
    assert load_profile("h100-sxm-80gb").gpus_per_node == 8


def test_solve_counts_nodes_in_the_profiles_servers():
    res = shardplan.solve("Llama-3.1-8B", "gb200-nvl72", nodes=2, seq_length=4096, global_batch_size=16, top=1,
                          proposer="none", time_limit_s=30)
    _, placement, _ = res.context
    assert (placement.num_nodes, placement.gpus_per_node, placement.world_size) == (2, 4, 8)
    given = shardplan.solve("Llama-3.1-8B", "gb200-nvl72", nodes=1, gpus_per_node=8, seq_length=4096,
                            global_batch_size=16, top=1, proposer="none", time_limit_s=30)
    assert given.context[1].world_size == 8


def test_sweep_takes_each_profiles_server_and_says_when_they_differ():
    res = sweep("Llama-3.1-8B", "gb200-nvl72,h100-sxm-80gb", [1], seq_length=4096, global_batch_size=16)
    assert {(p.hardware, p.gpus) for p in res.points} == {("gb200-nvl72", 4), ("h100-sxm-80gb", 8)}
    assert res.gpus_per_node is None
    one = sweep("Llama-3.1-8B", "h100-sxm-80gb", [1], seq_length=4096, global_batch_size=16)
    assert one.gpus_per_node == 8 and one.points[0].gpus == 8


def test_check_warns_when_a_node_holds_more_gpus_than_the_parts_server():
    recipe = {"model": "Llama-3.1-8B", "hardware": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 16,
              "job": {"seq_length": 4096, "global_batch_size": 16}, "recipe": {"tp": 8}}
    res = shardplan.check(recipe, project=False)
    said = [w for w in res.warnings if w.rule == "node_size"]
    assert len(said) == 1 and "16 GPUs per node, but a h100-sxm-80gb server holds 8" in said[0].message
    assert said[0].fix.startswith("use --gpus-per-node 8")
    fitting = shardplan.check({**recipe, "gpus_per_node": 8}, project=False)
    assert not [w for w in fitting.warnings if w.rule == "node_size"]

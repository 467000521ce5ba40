"""The generation deployment's Serve options: one replica per GPU of the cluster, each holding one GPU;
one replica reserving no CPU on a cluster without GPUs; the setting overrides the count. (The deployment
itself is tested on the two-node cluster in test_multinode.py.)"""

from __future__ import annotations

from workbench.config import RaySettings, Settings
from workbench.scale.generation import generation_options


def test_one_replica_per_gpu_each_holding_one():
    opts = generation_options(Settings(), num_gpus=4.0)
    assert opts["num_replicas"] == 4
    assert opts["ray_actor_options"] == {"num_cpus": 0, "num_gpus": 1}
    assert opts["name"] == "generation"


def test_one_replica_without_gpus_and_the_setting_overrides():
    opts = generation_options(Settings(), num_gpus=0.0)
    assert opts["num_replicas"] == 1 and "num_gpus" not in opts["ray_actor_options"]
    opts = generation_options(Settings(ray=RaySettings(generation_replicas=2)), num_gpus=8.0)
    assert opts["num_replicas"] == 2 and opts["ray_actor_options"]["num_gpus"] == 1
    assert opts["max_ongoing_requests"] == 256


def test_merged_outputs_join_the_deltas_and_keep_the_last_totals():
    from neural.generation.outputs import RequestOutput
    from workbench.scale.generation import merge_outputs

    a = RequestOutput("r", " to", [5], " to", [5], 3, 0)
    b = RequestOutput("r", " be", [9], " to be", [5, 9], 3, 0)
    c = RequestOutput("r", ",", [2], " to be,", [5, 9, 2], 3, 0, finished=True, finish_reason="length")
    m = merge_outputs([a, b, c])
    assert (m.delta_text, m.delta_token_ids, m.text, m.token_ids) == (" to be,", [5, 9, 2], " to be,", [5, 9, 2])
    assert m.finished and m.finish_reason == "length"
    assert merge_outputs([a]) is a
    # each merged step's tokens and text stay readable, so rails can judge them one by one
    assert m.step_deltas() == [(1, " to"), (2, " be"), (3, ",")]
    assert a.step_deltas() == [(1, " to")]
    assert merge_outputs([merge_outputs([a, b]), c]).step_deltas() == m.step_deltas()

"""Module 04's facts: parameters and cache bytes of MiniMind2-Small, its MHA twin and MiniMind-3, measured
on minimind_ref (KV caches of real tensors, models built on the meta device), the notebook's toy
sizes, the experiments' defaults, and multi-head latent attention's cache on DeepSeek-V2's sizes
(minimind_ref/variants/mla.py, whose constants tests/course/test_facts_04_gqa_mla.py holds to
transformers' configs and the paper). The GQA paper's Table 1 is cited; the ratio derived from it
is a fact.
"""

from __future__ import annotations

import torch

import minimind_ref as mm
from facts import fact, once, sources
from facts.measure import attention_parameters as attention_params
from facts.measure import cache_bytes_per_token
from facts.measure import parameters as model_params
from minimind_ref.variants.mla import DEEPSEEK_V2, LatentCache, MLAConfig, MultiHeadLatentAttention

MIB = 2 ** 20
DEFAULT = mm.MiniMindConfig()
MHA = DEFAULT.replace(num_key_value_heads=DEFAULT.num_attention_heads)
THREE = mm.MiniMindConfig.minimind3()
TOY_CELL = "04e336fb"  # the toy GQA: H, H_kv, T, D
REPEAT_CELL = "9e81a6ce"  # repeat_kv's expand and reshape on a tiny cache
DECODE_CELL = "ce25392c"  # one decoding step's allocations, on a cache of MiniMind's shape
TINY_CELL = "bd825a2d"  # the tiny model trained on the lookback task
UPTRAIN_CELL = "66e42bb5"  # the converted models uptrained
READS_CELL = "ee82ca55"  # the bytes a decoding step reads, per model and cache length


def script_defaults(name: str):
    return sources.defaults("04", name), sources.experiment("04", name)


# ---------------------------------------------------------------------------- MiniMind2-Small and its twin

@fact
def minimind2_heads_share_kv_heads():
    """8 query heads share 2 key/value heads."""
    return DEFAULT.num_attention_heads, DEFAULT.num_key_value_heads


@fact
def minimind3_shares_kv_heads():
    """MiniMind-3 shares 4 among 8."""
    return THREE.num_key_value_heads, THREE.num_attention_heads


@fact
def minimind2_n_rep():
    """`n_rep = 8 / 2 = 4`: heads 0-3 read key/value head 0, heads 4-7 read key/value head 1 (repeat_kv)."""
    h, kv = DEFAULT.num_attention_heads, DEFAULT.num_key_value_heads
    reads = mm.repeat_kv(torch.arange(kv, dtype=torch.float32).view(1, -1, 1, 1), h // kv)[0, :, 0, 0].tolist()
    groups = [(reads.index(g), len(reads) - 1 - reads[::-1].index(g), g) for g in range(kv)]
    return (h, kv, h // kv, *(n for group in groups for n in group))


@fact
def minimind2_gqa_summary():
    """The guide's paragraph: sizes, parameters, cache bytes and MiB at the longest context."""
    c, h, kv, d, layers = (DEFAULT.hidden_size, DEFAULT.num_attention_heads, DEFAULT.num_key_value_heads,
                           DEFAULT.head_dim, DEFAULT.num_hidden_layers)
    gqa_total, mha_total = model_params(DEFAULT), model_params(MHA)
    bf16, bf16_mha = cache_bytes_per_token(DEFAULT, torch.bfloat16), cache_bytes_per_token(MHA, torch.bfloat16)
    context = DEFAULT.max_position_embeddings
    return (c, h, kv, d, layers, attention_params(DEFAULT), attention_params(MHA), mha_total - gqa_total,
            gqa_total, mha_total, bf16, bf16_mha, bf16 * context / MIB, bf16_mha * context / MIB)


@fact
def minimind2_context_length():
    return DEFAULT.max_position_embeddings


@fact
def minimind3_gqa_summary():
    """`C = 768`, `H = 8`, `H_kv = 4`, `D = 96`, `L = 8`."""
    return (THREE.hidden_size, THREE.num_attention_heads, THREE.num_key_value_heads, THREE.head_dim,
            THREE.num_hidden_layers)


@fact
def minimind3_query_heads_per_kv_head():
    """each key/value head between 2 query heads instead of 4."""
    return (THREE.num_attention_heads // THREE.num_key_value_heads,
            DEFAULT.num_attention_heads // DEFAULT.num_key_value_heads)


@fact
def minimind3_cache_against_minimind2():
    """12,288 bytes per token in bfloat16, 3 times MiniMind2-Small's 4,096 (twice the heads, 1.5 times as wide)."""
    ours, two = cache_bytes_per_token(THREE, torch.bfloat16), cache_bytes_per_token(DEFAULT, torch.bfloat16)
    exp2 = sources.experiment("04", "exp2_savings")
    assert exp2.attention_params_closed_form(THREE) == attention_params(THREE)
    return (ours, ours / two, two, THREE.num_key_value_heads / DEFAULT.num_key_value_heads,
            THREE.head_dim / DEFAULT.head_dim)


@fact
def minimind3_mha_twin_cache():
    mha = cache_bytes_per_token(THREE.replace(num_key_value_heads=THREE.num_attention_heads), torch.bfloat16)
    assert mha == 2 * cache_bytes_per_token(THREE, torch.bfloat16)
    return mha


@fact
def gqa_paper_speedup():
    """Table 1 of arXiv 2305.13245 (cited): 0.28 s per sample for GQA-8 against 1.51 s for MHA."""
    return 1.51 / 0.28


# ---------------------------------------------------------------------------- the experiments

@fact
def exp1_max_tokens():
    return script_defaults("exp1_repeat_kv_memory")[0].max_tokens


@fact
def exp3_uptrain_fraction_is_a_tenth():
    return script_defaults("exp3_uptraining")[0].uptrain_fraction == 0.1


@fact
def exp3_groups():
    """converts it to 4, 2 and 1 key/value heads (from 8)."""
    groups = script_defaults("exp3_uptraining")[1].GROUPS
    assert groups[0] == DEFAULT.num_attention_heads
    return groups[1:]


@fact
def exp4_lengths():
    return tuple(sorted(script_defaults("exp4_decode_speed")[0].lengths))


@fact
def exp_scripts_04():
    from labkit.syllabus import experiment_scripts, get_module

    return len(experiment_scripts(get_module("04", sources.ROOT)))


@fact
def exp5_prompt_and_steps():
    args = script_defaults("exp5_mla")[0]
    return args.tokens, args.steps


# ---------------------------------------------------------------------------- the notebook

@fact
def mha_cache_over_weights_at_longest_context():
    """An MHA cache of the longest sequence against the model's weights, both bfloat16 ("ten times")."""
    return cache_bytes_per_token(MHA, torch.bfloat16) * DEFAULT.max_position_embeddings / (model_params(DEFAULT) * 2)


@fact
def toy_gqa_sizes():
    """`H = 4` query heads, `H_kv = 2`, `n_rep = H / H_kv = 2`: query heads 0 and 1 read 0, 2 and 3 read 1."""
    toy = sources.run_cells("04", TOY_CELL, torch=torch, math=__import__("math"), print=lambda *a, **k: None)
    return toy["q"].shape[0], toy["k"].shape[0], toy["n_rep"]


@once
def _repeat_cell() -> dict:
    return sources.run_cells("04", REPEAT_CELL, torch=torch, mm=mm, print=lambda *a, **k: None)


@fact
def expanded_strides():
    """The key/value-head axis (stride 20) and the repeat axis (stride 0) of the notebook's expanded cache."""
    return _repeat_cell()["expanded"].stride()[1:3]


@fact
def repeat_kv_copy_factor():
    """How many times k_cache's bytes the notebook's reshape (repeat_kv's second step) allocates."""
    cell = _repeat_cell()
    assert torch.equal(cell["repeated"], mm.repeat_kv(cell["k_cache"], cell["repeated"].shape[1] // 2))
    return cell["repeated"].untyped_storage().nbytes() // cell["k_cache"].untyped_storage().nbytes()


@fact
def notebook_big_cache():
    """2048 positions over `H_kv = 2` key/value heads of size 64, as in MiniMind."""
    _, kv, positions, d = sources.read("04", DECODE_CELL, r"^k1 = torch\.randn\((\d+), (\d+), (\d+), (\d+)\)")
    assert (kv, d) == (DEFAULT.num_key_value_heads, DEFAULT.head_dim)
    return positions, kv, d


@fact(tolerance=(50, None, 50), why="'about 3,200' and 'about 12,600' are quoted to the hundred; the ratio exactly")
def float32_caches_outweigh_weights():
    """From about how many tokens MHA's float32 cache outweighs MiniMind's weights, how many times
    later GQA's does ("four times as many"), and from about how many tokens."""
    weights32 = model_params(DEFAULT) * 4
    mha, gqa = cache_bytes_per_token(MHA, torch.float32), cache_bytes_per_token(DEFAULT, torch.float32)
    return weights32 / mha, mha / gqa, weights32 / gqa


def _tiny_config() -> mm.MiniMindConfig:
    """The notebook's tiny model, as its cell builds it."""
    source = sources.cell("04", TINY_CELL)
    start = source.index("tiny = mm.MiniMindConfig(")
    call = source[start + len("tiny = "):source.index(")", start) + 1]
    return eval(call, {"mm": mm})  # the cell's own call: its sizes, as the notebook trains them


@fact
def tiny_uptraining_model():
    """8 heads of size 8, one layer."""
    tiny = _tiny_config()
    return tiny.num_attention_heads, tiny.head_dim, tiny.num_hidden_layers


@fact
def tiny_uptraining_chance():
    return 1, _tiny_config().vocab_size


@fact
def tiny_uptraining_steps():
    """30 steps, a tenth of the 300 it was trained for."""
    trained = sources.read("04", TINY_CELL, r"^log = train\(mha, task, steps=(\d+),")
    uptrain = sources.read("04", UPTRAIN_CELL, r"train\(converted\[g\], task, steps=(\d+),")
    assert uptrain * 10 == trained
    return uptrain, trained


@fact
def mha_over_gqa_bytes_read_at_256():
    """Bytes a decoding step reads (weights + cache, float32), MHA over GQA, at the shortest cache of
    the notebook's table (256 positions): the cell's sum, on minimind_ref's models and caches."""
    length = sources.read("04", READS_CELL, r"^for S in \((\d+),")

    def read(config):
        return model_params(config) * 4 + length * cache_bytes_per_token(config, torch.float32)

    return read(MHA) / read(DEFAULT)


@fact
def notebook_solutions_04():
    cells = sources.notebook("04").cells
    # the exercises the learner writes; a find-the-bug cell is a solution cell too, but not counted
    return len([c for c in cells if "solution" in (tags := c.metadata.get("tags", [])) and "find-the-bug" not in tags])


# ---------------------------------------------------------------------------- multi-head latent attention

def kv_numbers(kv_heads: int, head_dim: int) -> int:
    """Numbers per token and layer cached by MHA / GQA / MQA, measured on minimind_ref's KVCache."""
    config = mm.MiniMindConfig(hidden_size=64, num_hidden_layers=1, num_attention_heads=kv_heads,
                               num_key_value_heads=kv_heads, head_dim=head_dim)
    kv = mm.KVCache(config, batch_size=1, capacity=2)
    keys = torch.zeros(1, kv_heads, 2, head_dim)
    kv.update(0, keys, keys.clone())
    return kv.nbytes() // 2 // 4


def mla_numbers(config: MLAConfig) -> int:
    """Numbers per token and layer in a LatentCache that `config`'s layer filled."""
    small = config.replace(hidden_size=32, q_lora_rank=None, num_hidden_layers=1)
    latent = LatentCache(small, batch_size=1)
    with torch.no_grad():
        MultiHeadLatentAttention(small)(torch.randn(1, 3, 32), cache=latent)
    return latent.nbytes() // 3 // 4


@once
def mla():
    v2 = DEEPSEEK_V2
    numbers = mla_numbers(v2)
    return dict(mha=kv_numbers(v2.num_attention_heads, v2.qk_nope_head_dim), mla=numbers,
                gqa2=kv_numbers(2, v2.qk_nope_head_dim), mqa=kv_numbers(1, v2.qk_nope_head_dim),
                groups=numbers / kv_numbers(1, v2.qk_nope_head_dim),
                mm_gqa=kv_numbers(DEFAULT.num_key_value_heads, DEFAULT.head_dim),
                mm_mha=kv_numbers(DEFAULT.num_attention_heads, DEFAULT.head_dim), twin=mla_numbers(MLAConfig()))


@fact
def deepseek_v2_mla_sizes():
    """(`n_h = 128` heads of `d_h = 128`, `d_c = 512`, `d_R = 64`)."""
    v2 = DEEPSEEK_V2
    return v2.num_attention_heads, v2.qk_nope_head_dim, v2.kv_lora_rank, v2.qk_rope_head_dim


@fact
def mla_cache_against_mha():
    """MLA's numbers per token and layer, MHA's, and how many times fewer."""
    return mla()["mla"], mla()["mha"], mla()["mha"] / mla()["mla"]


@fact
def mla_as_gqa_groups():
    return mla()["groups"]


@fact
def mla_more_than_gqa2_and_mqa():
    """more than GQA-2 (512) and more than MQA (256)."""
    assert mla()["gqa2"] < mla()["mla"] and mla()["mqa"] < mla()["mla"]
    return 2, mla()["gqa2"], mla()["mqa"]


@fact
def mla_saving_at_deepseek_ratios():
    """`n_h / 2.25`, only 3.6 at MiniMind's 8 heads."""
    twin = MLAConfig()
    for config in (DEEPSEEK_V2, twin):
        assert config.kv_lora_rank == 4 * config.qk_nope_head_dim
        assert config.qk_rope_head_dim == config.qk_nope_head_dim // 2
    return mla()["groups"], mla()["mm_mha"] / mla()["twin"], DEFAULT.num_attention_heads


@fact
def mla_twin_against_minimind_gqa():
    """(MLA's twin at MiniMind's sizes, 2, MiniMind's own GQA-2): the twin caches more."""
    assert mla()["twin"] > mla()["mm_gqa"]
    return mla()["twin"], DEFAULT.num_key_value_heads, mla()["mm_gqa"]


@fact
def deepseek_v2_layer_million_parameters():
    with torch.device("meta"):
        return sum(p.numel() for p in MultiHeadLatentAttention(DEEPSEEK_V2).parameters()) / 1e6


@fact
def mla_numbers_per_token():
    return mla()["mla"]


@fact
def mla_times_fewer_than_mha():
    return mla()["mha"] / mla()["mla"]


@fact
def mha_numbers_per_token_deepseek():
    return mla()["mha"]

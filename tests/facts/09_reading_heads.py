"""Module 09's facts, measured on the committed tiny MiniMind with the same calls and prompts as
the experiment scripts' defaults: its size and recipe (labkit.tiny_model, labkit.tiny_data), the head
scores against an even spread, the ablations and the attention sink. Values from float32 inference
carry quoting's INFERENCE_SPREAD. The tiny model's layer and head counts are module 01's facts.
"""

from __future__ import annotations

import math
from functools import cache

import torch
from quoting import INFERENCE_SPREAD

from facts import fact
from labkit import tiny_data as td
from labkit import tiny_heads as th
from labkit import tiny_model as tm

SPAN = 24  # n: the repeated span of exp1's and the notebook's prompts


@cache
def model():
    torch.set_num_threads(1)
    return tm.load_tiny_model()[0]


@cache
def scores():
    return th.measure_head_scores(model())  # exp1: 16 prompts, n = 24


@cache
def measured() -> dict[str, float]:
    """What exp2 and exp3 measure with their defaults (seed 0)."""
    probe = th.repeated_probe(32, SPAN, seed=1000)  # exp2's prompts

    def without(heads, mode):
        with th.ablated(model(), heads, mode):
            return th.repeat_loss(model(), probe, SPAN)

    spans = th.repeated_probe(16, SPAN, seed=0)  # exp3's prompts
    code = th.attention_weights(model(), th.text_probe(16, 64, seed=0)).mean(0)
    sink = scores().sink_head
    return {
        "intact": th.repeat_loss(model(), probe, SPAN),
        "without_previous": without([scores().previous_token_head], "mean"),
        "without_inductions": without(scores().induction_heads(), "mean"),
        "zero_0_2": without([(0, 2)], "zero"),
        "mean_0_2": without([(0, 2)], "mean"),
        "sink_on_code": th.first_token_scores(code)[sink].item(),
        "sink_without_bos": th.first_token_scores(th.attention_weights(model(), spans[:, 1:]).mean(0))[sink].item(),
    }


def even_scores(span: int) -> tuple[float, float, float]:
    """(previous-token, induction, first-token) scores of a head spread evenly over 2 span + 1 tokens."""
    T = 2 * span + 1
    even = torch.tril(torch.ones(T, T, dtype=torch.float64))
    even = even / even.sum(-1, keepdim=True)
    return (th.previous_token_scores(even).item(), th.induction_scores(even, span).item(),
            th.first_token_scores(even).item())


def even_previous(T: int) -> float:
    even = torch.tril(torch.ones(T, T, dtype=torch.float64))
    return th.previous_token_scores(even / even.sum(-1, keepdim=True)).item()


# ------------------------------------------------------------------------ the model and training


@fact
def tiny_parameter_count():
    return tm.parameter_count(model())


@fact
def tiny_shape():
    """(hidden size, layers, heads, head width); every head has its own key/value head."""
    config = model().config
    assert config.num_key_value_heads == config.num_attention_heads
    return config.hidden_size, config.num_hidden_layers, config.num_attention_heads, config.head_dim


@fact
def tiny_feed_forward_width():
    return model().config.intermediate_size


@fact
def tiny_rope_base():
    return model().config.rope_theta


@fact
def tiny_tied_embeddings():
    return bool(model().config.tie_word_embeddings)


@fact
def tiny_vocabulary():
    """(vocabulary, bytes, BOS)."""
    return td.VOCAB_SIZE, td.VOCAB_SIZE - 1, td.BOS


@fact
def tiny_uniform_guess():
    """A model that learned nothing: probability 1/V per byte, loss `ln V`."""
    return 1, td.VOCAB_SIZE, td.VOCAB_SIZE


@fact
def tiny_recipe():
    """(steps, sequences per batch, tokens per sequence, learning rate)."""
    recipe = tm.Recipe()
    return recipe.steps, recipe.batch_size, recipe.seq_len, recipe.lr


@fact
def tiny_recipe_half_synthetic():
    recipe = tm.Recipe()
    return recipe.synthetic * 2 == recipe.batch_size


@fact
def tiny_train_files():
    return len(td.TRAIN_FILES)


@fact
def tiny_held_out_files():
    return len(td.HELD_OUT_FILES)


@fact
def tiny_checkpoint_mb():
    return tm.load_report()["bytes"] / 1e6


@fact(spread=INFERENCE_SPREAD)
def tiny_held_out_loss():
    """(held-out loss, 257, ln 257): the report's loss against a uniform guess."""
    return tm.load_report()["held_out_loss"], td.VOCAB_SIZE, math.log(td.VOCAB_SIZE)


@fact
def tiny_prefix_steps():
    return tm.PREFIX_STEPS


@fact(tolerance=0.5)
def tiny_training_minutes():
    """The training time measured when the committed checkpoint was made, in minutes."""
    return tm.load_report()["training"]["wall_seconds"] / 60


# ------------------------------------------------------------------------------- head scores


@fact
def even_head_scores():
    """(previous-token, induction, first-token, n) of the even yardstick on exp1's prompts."""
    return (*even_scores(SPAN), SPAN)


@fact
def head_scores_prompts():
    """(prompts, n) of exp1 and the notebook's checks: measure_head_scores' defaults."""
    prompts, span = th.measure_head_scores.__defaults__[1:3]
    assert span == SPAN
    return prompts, span


@fact
def head_scores_prompt_count():
    return th.measure_head_scores.__defaults__[1]


@fact
def previous_token_head_layer():
    return scores().previous_token_head[0]


@fact(spread=INFERENCE_SPREAD)
def previous_token_head_score():
    return scores().previous[scores().previous_token_head].item()


@fact
def induction_head_count():
    return len(scores().induction_heads())


@fact
def induction_heads_layer():
    """The one layer that holds every induction head."""
    (layer,) = {layer for layer, _ in scores().induction_heads()}
    return layer


@fact(spread=INFERENCE_SPREAD)
def induction_head_score_range():
    values = sorted(scores().induction[h].item() for h in scores().induction_heads())
    return values[0], values[-1]


@fact(spread=INFERENCE_SPREAD)
def sink_head_bos_weight():
    return scores().first[scores().sink_head].item()


@fact
def other_heads_below():
    """Every head but the previous-token and induction heads scores below this on both."""
    s = scores()
    named = {s.previous_token_head, *s.induction_heads()}
    layers, heads = s.previous.shape
    others = [max(s.previous[i, j].item(), s.induction[i, j].item())
              for i in range(layers) for j in range(heads) if (i, j) not in named]
    assert max(others) < 0.25
    return 0.25


@fact(spread=INFERENCE_SPREAD)
def previous_token_head_vs_even():
    return scores().previous[scores().previous_token_head].item() / even_scores(SPAN)[0]


@fact(spread=INFERENCE_SPREAD)
def induction_heads_vs_even():
    return min(scores().induction[h].item() for h in scores().induction_heads()) / even_scores(SPAN)[1]


@fact
def planted_induction_first_token_score():
    """The planted induction map of n = 4 parks half its queries on BOS."""
    n, T = 4, 9
    planted = torch.zeros(T, T)
    planted[: n + 1, 0] = 1
    second = torch.arange(n + 1, T)
    planted[second, second - n + 1] = 1
    return th.first_token_scores(planted).item()


# -------------------------------------------------------------------------- ablations, sinks


@fact(spread=INFERENCE_SPREAD)
def repeat_loss_intact():
    return measured()["intact"]


@fact(spread=INFERENCE_SPREAD)
def repeat_loss_without_copying():
    """Without the previous-token head, or without every induction head: the same loss, to 0.1."""
    m = measured()
    assert round(m["without_previous"], 1) == round(m["without_inductions"], 1)
    return m["without_inductions"]


@fact
def probe_characters():
    """(characters the probes' spans are drawn from, the same, ln of it)."""
    return len(td.PRINTABLE), len(td.PRINTABLE), math.log(len(td.PRINTABLE))


@fact(spread=INFERENCE_SPREAD)
def repeat_loss_zeroing_0_2():
    return measured()["zero_0_2"]


@fact
def mean_ablating_0_2_changes_nothing():
    return measured()["mean_0_2"] < 0.05


@fact(spread=INFERENCE_SPREAD)
def sink_on_code():
    return measured()["sink_on_code"]


@fact(spread=INFERENCE_SPREAD)
def sink_without_bos():
    return measured()["sink_without_bos"]


@fact
def even_previous_long_and_short():
    """(tokens, previous-token score of an even head over them) for exp1's prompts, then 9 tokens."""
    return 2 * SPAN + 1, even_scores(SPAN)[0], even_previous(9), 9


@fact
def even_previous_nine_tokens():
    """(tokens, previous-token score of an even head over them): the planted maps' length, n = 4."""
    return 9, even_previous(9)


@fact
def head_scores_prompt_tokens():
    """Tokens in each prompt of the measured scores: BOS and the span twice."""
    return 2 * SPAN + 1

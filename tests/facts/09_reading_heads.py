"""Module 09's facts, measured on the committed tiny MiniMind with the experiment scripts' own
functions at their defaults: its size and recipe (labkit.tiny_model, labkit.tiny_data), the head
scores (labkit.tiny_heads, as exp1 measures them) against exp1's even head, exp2's ablations, exp3's
sink measurements, and the notebook's planted maps, run from its cells. Values from float32
inference carry quoting's INFERENCE_SPREAD. The tiny model's layer and head counts are module 01's
facts.
"""

from __future__ import annotations

import inspect
import math

import torch
from quoting import INFERENCE_SPREAD

from facts import fact, once, sources
from labkit import tiny_data as td
from labkit import tiny_heads as th
from labkit import tiny_model as tm

PLANTED_CELL = "95680131"  # the three planted maps, n = 4
TABLE_CELL = "201c280c"  # their three scores, and an even head's
SPREAD_WHY = ("float32 inference: its spread across machines, quoting.INFERENCE_SPREAD (1e-5, ten times the "
              "1.2e-6 that python -m facts.spread measures)")


def head_scores_defaults() -> dict[str, int]:
    """measure_head_scores' prompts and span n: what exp1 and the notebook's checks measure on."""
    return {name: p.default for name, p in inspect.signature(th.measure_head_scores).parameters.items()
            if p.default is not inspect.Parameter.empty}


def span() -> int:
    return head_scores_defaults()["span"]


@once
def model():
    torch.set_num_threads(1)
    return tm.load_tiny_model()[0]


@once
def scores():
    return th.measure_head_scores(model())  # exp1: 16 prompts, n = 24


@once
def ablations() -> dict:
    """What exp2 measures with its defaults (seed 0): the loss intact and with heads switched off."""
    args = sources.defaults("09", "exp2_ablate_induction")
    return sources.experiment("09", "exp2_ablate_induction").switch_each_head_off(model(), 0, args.span, args.count)


@once
def sinks() -> dict[str, float]:
    """What exp3 measures with its defaults (seed 0) on the sink head: on code, and without BOS."""
    args = sources.defaults("09", "exp3_attention_sinks")
    sink = th.measure_head_scores(model(), seed=0, count=args.count, span=args.span).sink_head
    spans = th.repeated_probe(args.count, args.span, seed=0)
    code = th.attention_weights(model(), th.text_probe(args.count, args.code_length, seed=0)).mean(0)
    return {"on_code": th.first_token_scores(code)[sink].item(),
            "without_bos": th.first_token_scores(th.attention_weights(model(), spans[:, 1:]).mean(0))[sink].item()}


def even_scores(n: int) -> dict[str, float]:
    """exp1's yardstick: the three scores of a head spread evenly over 2 n + 1 tokens."""
    return sources.experiment("09", "exp1_head_scores").even_head_scores(n)


@once
def planted() -> dict:
    """The notebook's planted maps and the table of their scores, an even head's in the last row."""
    return sources.run_cells("09", PLANTED_CELL, TABLE_CELL, torch=torch, th=th, print=lambda *a, **k: None,
                             show_heatmaps=lambda *a, **k: None)


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


@fact(spread=INFERENCE_SPREAD, why=SPREAD_WHY)
def tiny_held_out_loss():
    """(held-out loss, 257, ln 257): the report's loss against a uniform guess."""
    return tm.load_report()["held_out_loss"], td.VOCAB_SIZE, math.log(td.VOCAB_SIZE)


@fact
def tiny_prefix_steps():
    return tm.PREFIX_STEPS


@fact
def tiny_training_minutes():
    """The training time measured when the committed checkpoint was made, in minutes."""
    return tm.load_report()["training"]["wall_seconds"] / 60


# ------------------------------------------------------------------------------- head scores


@fact
def even_head_scores():
    """(previous-token, induction, first-token, n) of exp1's even yardstick on its prompts."""
    n = sources.defaults("09", "exp1_head_scores").span
    assert n == span(), "exp1 measures on the prompts of measure_head_scores"
    even = even_scores(n)
    return even["previous"], even["induction"], even["first"], n


@fact
def head_scores_prompts():
    """(prompts, n) of exp1 and the notebook's checks: measure_head_scores' defaults."""
    return head_scores_defaults()["count"], span()


@fact
def head_scores_prompt_count():
    return head_scores_defaults()["count"]


@fact
def previous_token_head_layer():
    return scores().previous_token_head[0]


@fact(spread=INFERENCE_SPREAD, why=SPREAD_WHY)
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


@fact(spread=INFERENCE_SPREAD, why=SPREAD_WHY)
def induction_head_score_range():
    values = sorted(scores().induction[h].item() for h in scores().induction_heads())
    return values[0], values[-1]


@fact(spread=INFERENCE_SPREAD, why=SPREAD_WHY)
def sink_head_bos_weight():
    return scores().first[scores().sink_head].item()


@fact(below=True, spread=INFERENCE_SPREAD, why="'below 0.25': a bound above the highest other score; " + SPREAD_WHY)
def other_heads_below():
    """The highest previous-token or induction score of every head but those named."""
    s = scores()
    named = {s.previous_token_head, *s.induction_heads()}
    layers, heads = s.previous.shape
    return max(max(s.previous[i, j].item(), s.induction[i, j].item())
               for i in range(layers) for j in range(heads) if (i, j) not in named)


@fact(spread=INFERENCE_SPREAD, why=SPREAD_WHY)
def previous_token_head_vs_even():
    return scores().previous[scores().previous_token_head].item() / even_scores(span())["previous"]


@fact(spread=INFERENCE_SPREAD, why=SPREAD_WHY)
def induction_heads_vs_even():
    return min(scores().induction[h].item() for h in scores().induction_heads()) / even_scores(span())["induction"]


@fact
def planted_induction_first_token_score():
    """The notebook's planted induction map parks half its queries on BOS: its first-token score, from
    the notebook's own table (rows: previous, induction, sink, even; columns: previous, induction,
    first)."""
    return planted()["table"][1, 2].item()


# -------------------------------------------------------------------------- ablations, sinks


@fact(spread=INFERENCE_SPREAD, why=SPREAD_WHY)
def repeat_loss_intact():
    return ablations()["intact"]


@fact(spread=INFERENCE_SPREAD, why=SPREAD_WHY)
def repeat_loss_without_copying():
    """Without the previous-token head, or without every induction head (mean ablation): the same
    loss, to 0.1."""
    found = ablations()
    without_previous, without_inductions = found["mean"][found["previous"]], found["all_induction"]["mean"]
    assert round(without_previous, 1) == round(without_inductions, 1)
    return without_inductions


@fact
def probe_characters():
    """(characters the probes' spans are drawn from, the same, ln of it)."""
    return len(td.PRINTABLE), len(td.PRINTABLE), math.log(len(td.PRINTABLE))


def _zeroed_head() -> tuple[int, int]:
    """'head 0.2': outside the circuit, the head whose zero ablation breaks copying most."""
    found = ablations()
    outside = [h for h in found["heads"] if not found["role"][h]]
    head = max(outside, key=found["zero"].get)
    assert head == (0, 2), f"the head zero ablation misleads on is now {head}, not the guide's 0.2"
    return head


@fact(spread=INFERENCE_SPREAD, why=SPREAD_WHY)
def repeat_loss_zeroing_0_2():
    return ablations()["zero"][_zeroed_head()]


@fact
def mean_ablating_0_2_changes_nothing():
    """Mean-ablated, head 0.2 leaves the loss within 0.05 of the intact model's (exp2's own
    'harmless' is 0.5)."""
    found = ablations()
    return abs(found["mean"][_zeroed_head()] - found["intact"]) < 0.05


@fact(spread=INFERENCE_SPREAD, why=SPREAD_WHY)
def sink_on_code():
    return sinks()["on_code"]


@fact(spread=INFERENCE_SPREAD, why=SPREAD_WHY)
def sink_without_bos():
    return sinks()["without_bos"]


def _prompt_tokens() -> int:
    """Tokens in each prompt of the measured scores (BOS and the span twice), counted on the prompts."""
    return th.repeated_probe(head_scores_defaults()["count"], span()).shape[-1]


@fact
def even_previous_long_and_short():
    """(tokens, previous-token score of an even head over them) for exp1's prompts, then for the
    notebook's planted maps."""
    table = planted()
    return _prompt_tokens(), even_scores(span())["previous"], table["table"][3, 0].item(), table["T_toy"]


@fact
def even_previous_nine_tokens():
    """(tokens, previous-token score of an even head over them) of the notebook's planted maps."""
    table = planted()
    return table["T_toy"], table["table"][3, 0].item()


@fact
def head_scores_prompt_tokens():
    """Tokens in each prompt of the measured scores: BOS and the span twice."""
    return _prompt_tokens()

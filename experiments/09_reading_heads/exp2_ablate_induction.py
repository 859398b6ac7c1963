"""Switching heads off shows the induction circuit of the trained tiny MiniMind: without the
previous-token head of layer 0, or without the induction heads of layer 1, the model can no longer
continue a repeated span; without any one induction head it still can (the others cover for it);
and the other heads hardly matter. Zeroing a head instead of replacing it by its mean can blame a
head that is not in the circuit.

The model reads prompts of BOS, n random printable characters and the same n again, and the
measure is its loss on the second copy (from its second character on, since the first cannot be
told): near 0 when it copies, about ln 95 = 4.55 when it guesses among the printable characters.
A head is switched off by replacing its slice of the attention output, before o_proj mixes the
heads, with (a) its mean over the batch and positions ("mean ablation", the default) or (b) zeros
("zero ablation"); labkit/tiny_heads.py, `ablated`. The roles of the heads come from
their attention scores (exp1_head_scores.py).

Why it matters: a heatmap shows where a head looks, not whether the model needs it. An induction
head can only find "the token after the earlier occurrence" if a layer-0 head has copied each
token's predecessor into it, so the previous-token head is part of the circuit though it never
looks at the earlier copy. Zero ablation is the bluntest switch: a head whose output is nearly the
same everywhere feeds later layers a constant they rely on, and zeroing it breaks the model for
that reason alone; the mean keeps the constant and removes only what depends on the tokens.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch

from labkit import Experiment, int_in, print_table
from labkit.i18n import phrase
from labkit.tiny_data import PRINTABLE
from labkit.tiny_heads import ablated, measure_head_scores, repeat_loss, repeated_probe
from labkit.tiny_model import load_tiny_model_or_exit

GUESSING = math.log(len(PRINTABLE))  # the loss of an even guess among the printable characters
BROKEN = 0.5 * GUESSING  # copying is broken: the loss is above half of guessing
COPIES = 0.1  # copying works: the loss is below this
COVERED = 1.0  # one induction head off: the others keep the loss below this
HARMLESS = 0.5  # a head outside the circuit off (mean): the loss stays below this


def add_arguments(parser):
    parser.add_argument("--count", type=int_in(1, 256), default=32, help="probe prompts (default 32)")
    parser.add_argument("--span", type=int_in(3, 47), default=24,
                        help="characters in the repeated span, n, from 3 to 47 (default 24)")


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments)
    args = exp.args
    model, _ = load_tiny_model_or_exit()  # a missing checkpoint: says how to make it, exits 2
    torch.set_num_threads(1)  # small matrices: one thread is fastest on a shared machine
    found = switch_each_head_off(model, args.seed, args.span, args.count)
    print_losses(found, args.span, args.count)
    claim_circuit(exp, found)
    draw_ablation(exp, found)
    return exp.finish()


def switch_each_head_off(model, seed: int, span: int, count: int) -> dict:
    """The heads' roles from their scores; the loss on the second copy of repeated prompts with the
    model intact, with each head switched off (mean and zero ablation), and with every induction
    head off."""
    scores = measure_head_scores(model, seed=seed, span=span)
    previous, inductions = scores.previous_token_head, scores.induction_heads()
    probe = repeated_probe(count, span, seed=seed + 1000)  # other prompts than the scores'
    intact = repeat_loss(model, probe, span)

    def loss_without(heads, mode):
        with ablated(model, heads, mode):
            return repeat_loss(model, probe, span)

    L, H = scores.previous.shape
    heads = [(layer, head) for layer in range(L) for head in range(H)]
    role = {h: phrase("previous-token") if h == previous else phrase("induction") if h in inductions else ""
            for h in heads}
    mean = {h: loss_without([h], "mean") for h in heads}
    zero = {h: loss_without([h], "zero") for h in heads}
    all_induction = {mode: loss_without(inductions, mode) for mode in ("mean", "zero")}

    return {"heads": heads, "role": role, "previous": previous, "inductions": inductions, "intact": intact,
            "mean": mean, "zero": zero, "all_induction": all_induction}


def print_losses(found: dict, span: int, count: int) -> None:
    heads, role, intact = found["heads"], found["role"], found["intact"]
    mean, zero, all_induction = found["mean"], found["zero"], found["all_induction"]
    print(f"loss on the second copy, {count} prompts of {span} characters twice "
          f"(guessing: ln {len(PRINTABLE)} = {GUESSING:.2f}); intact model: {intact:.3f}")
    rows = [[f"{layer}.{head}", role[(layer, head)], mean[(layer, head)], zero[(layer, head)]]
            for layer, head in heads]
    rows.append([phrase("all induction"), "", all_induction["mean"], all_induction["zero"]])
    print_table(["head off", "role", "mean ablation", "zero ablation"], rows, ["", "", ".3f", ".3f"])
    print()



def claim_circuit(exp, found: dict) -> None:
    heads, role, previous, inductions = found["heads"], found["role"], found["previous"], found["inductions"]
    intact, mean, zero, all_induction = found["intact"], found["mean"], found["zero"], found["all_induction"]
    exp.claim(intact < COPIES, f"the intact model copies the span: loss {intact:.3f} (below {COPIES})")
    exp.claim(mean[previous] > BROKEN,
              f"without the previous-token head {previous} copying breaks: loss {mean[previous]:.2f} "
              f"(above {BROKEN:.2f}, half of guessing), though that head never looks at the earlier copy")
    exp.claim(bool(inductions) and all_induction["mean"] > BROKEN,
              f"without the induction heads {inductions} copying breaks: loss {all_induction['mean']:.2f}")
    worst_single = max((mean[h] for h in inductions), default=float("inf"))
    exp.claim(len(inductions) >= 2 and worst_single < COVERED,
              f"without any one induction head the others cover for it: the loss is at most "
              f"{worst_single:.2f} (below {COVERED})")
    others = [h for h in heads if not role[h]]
    worst_other = max(mean[h] for h in others)
    exp.claim(worst_other < HARMLESS,
              f"no other head matters much: switching off any of {others} (mean ablation) leaves the loss "
              f"at most {worst_other:.2f}")
    misled = [h for h in others if zero[h] > BROKEN]
    exp.claim(bool(misled),
              f"zero ablation misleads: zeroing {misled} (not in the circuit) breaks copying (loss "
              f"{', '.join(f'{zero[h]:.2f}' for h in misled)}), while replacing it by its mean does not "
              f"({', '.join(f'{mean[h]:.3f}' for h in misled)})")



def draw_ablation(exp, found: dict) -> None:
    heads, previous, inductions, intact = found["heads"], found["previous"], found["inductions"], found["intact"]
    mean, zero, all_induction = found["mean"], found["zero"], found["all_induction"]
    fig, ax = plt.subplots(figsize=(9, 3.6))
    names = [f"{layer}.{head}" for layer, head in heads] + ["all ind."]
    x = torch.arange(len(names)).float()
    ax.bar(x - 0.2, [mean[h] for h in heads] + [all_induction["mean"]], width=0.4, label="mean ablation")
    ax.bar(x + 0.2, [zero[h] for h in heads] + [all_induction["zero"]], width=0.4, label="zero ablation")
    ax.axhline(GUESSING, color="k", linestyle=":", label=f"guessing, ln {len(PRINTABLE)}")
    ax.axhline(intact, color="tab:green", linestyle="--", label="intact")
    ax.set_xticks(x.tolist(), names)
    ax.set_xlabel("head switched off (layer.head)")
    ax.set_ylabel("loss on the second copy")
    ax.set_title(f"previous-token head {previous}, induction heads {inductions}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    exp.save(fig, "ablation")


if __name__ == "__main__":
    raise SystemExit(main())

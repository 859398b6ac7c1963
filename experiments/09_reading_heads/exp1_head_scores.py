"""The trained tiny MiniMind has a previous-token head in layer 0 and induction heads in layer 1,
each far above what a head spreading its weight evenly would score, and a head that parks most of
its weight on the first token.

The model is the course's small trained MiniMind (2 layers x 4 heads, trained by `make train-tiny`;
see labkit/tiny_model.py). It reads prompts made of BOS, a span of random printable
characters, and the same span again. On such a prompt every head gets three scores, each a mean
attention weight (labkit/tiny_heads.py):

- previous: on key t - 1, over the queries t = 1 .. T - 1;
- induction: on key i - n + 1 (the token after the earlier occurrence of the current token), over
  the queries i = n + 1 .. 2n of the second copy;
- first: on key 0, BOS, over the queries t = 1 .. T - 1.

As a yardstick, each score is also computed for a head that spreads its weight evenly over every
key it may see (the causal running average of module 01). The claims: the best previous-token
head and every induction head beat that yardstick many times over, the induction heads sit in
layer 1 (an induction head needs the previous token's identity, which a layer-0 head must first
move into place), and one head puts more than half its weight on BOS.

Why it matters: a heatmap suggests a role; a score measured over many prompts confirms it, and the
yardstick says how much of a score is the head's choice rather than arithmetic.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch

from labkit import Experiment, int_in, print_table, show_heatmaps
from labkit.tiny_heads import (
    attention_weights,
    first_token_scores,
    induction_scores,
    measure_head_scores,
    previous_token_scores,
    repeated_probe,
)
from labkit.tiny_model import load_tiny_model_or_exit

STRONG = 0.5  # a head "does" a pattern when its score is above this
TIMES_EVEN = 5.0  # ... and at least this many times what an evenly spread head scores


def add_arguments(parser):
    parser.add_argument("--count", type=int_in(1, 256), default=16, help="probe prompts averaged over (default 16)")
    # distinct printable characters, 2n + 1 <= 256 positions
    parser.add_argument("--span", type=int_in(2, 47), default=24,
                        help="characters in the repeated span, n, from 2 to 47 (default 24)")


def even_head_scores(span: int) -> dict:
    """The three scores of a head that spreads its weight evenly over keys 0..t (query t)."""
    T = 2 * span + 1
    even = torch.tril(torch.ones(T, T))
    even = even / even.sum(-1, keepdim=True)  # row t: 1 / (t + 1) on each visible key
    return {"previous": previous_token_scores(even).item(), "induction": induction_scores(even, span).item(),
            "first": first_token_scores(even).item()}


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments)
    args = exp.args
    model, tokenizer = load_tiny_model_or_exit()  # a missing checkpoint: says how to make it, exits 2
    torch.set_num_threads(1)  # small matrices: one thread is fastest on a shared machine

    scores = measure_head_scores(model, seed=args.seed, count=args.count, span=args.span)
    even = even_head_scores(args.span)
    L, H = scores.previous.shape
    print(f"{args.count} prompts: BOS + {args.span} random characters + the same {args.span} again "
          f"(probe seed {args.seed})")
    rows = [[layer, head, p, i, f] for layer, head, p, i, f in scores.rows()]
    rows.append(["even", "-", even["previous"], even["induction"], even["first"]])
    print_table(["layer", "head", "previous", "induction", "first (BOS)"], rows, ["", "", ".3f", ".3f", ".3f"])
    print("('even' is a head that spreads its weight evenly over every key it may see)")
    print()

    prev_head, sink_head = scores.previous_token_head, scores.sink_head
    inductions = scores.induction_heads(STRONG)
    best_prev = scores.previous[prev_head].item()
    print(f"previous-token head: {prev_head}, score {best_prev:.3f}")
    print(f"induction heads (score above {STRONG}): {inductions}")
    print(f"head with the most weight on BOS: {sink_head}, score {scores.first[sink_head].item():.3f}")
    print()

    exp.claim(best_prev > STRONG and best_prev > TIMES_EVEN * even["previous"] and prev_head[0] == 0,
              f"head {prev_head} of layer 0 is a previous-token head: {best_prev:.2f} of its weight on the "
              f"previous token, {best_prev / even['previous']:.0f} times an even head's {even['previous']:.3f}")
    weakest = min((scores.induction[h].item() for h in inductions), default=0.0)
    exp.claim(bool(inductions) and all(layer >= 1 for layer, _ in inductions)
              and weakest > TIMES_EVEN * even["induction"],
              f"the induction heads {inductions} are all in layer 1 and the weakest puts {weakest:.2f} of its "
              f"weight on the token after the earlier occurrence, {weakest / even['induction']:.0f} times an even "
              f"head's {even['induction']:.3f}")
    best_first = scores.first[sink_head].item()
    exp.claim(best_first > STRONG and sink_head not in inductions,
              f"head {sink_head}, not an induction head, parks {best_first:.2f} of its weight on BOS "
              f"(an even head: {even['first']:.3f})")

    # One short prompt, every head: the three patterns are visible by eye.
    ids = repeated_probe(count=1, span=10, seed=args.seed)[0]
    weights = attention_weights(model, ids)[0]  # [L, H, T, T]
    fig = show_heatmaps(weights, x_labels=tokenizer.labels(ids),
                        suptitle="BOS + 10 random characters + the same 10: every layer and head")
    exp.save(fig, "heatmaps")

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2), sharey=True)
    names = [f"{layer}.{head}" for layer in range(L) for head in range(H)]
    for ax, (key, title) in zip(axes, [("previous", "previous token"), ("induction", "induction"),
                                       ("first", "first token (BOS)")]):
        ax.bar(names, getattr(scores, key).flatten().tolist(), color="tab:blue")
        ax.axhline(even[key], color="k", linestyle=":", label="even head")
        ax.set_title(title)
        ax.set_xlabel("layer.head")
        ax.set_ylim(0, 1)
    axes[0].set_ylabel("mean attention weight")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    exp.save(fig, "scores")
    return exp.finish()


if __name__ == "__main__":
    raise SystemExit(main())

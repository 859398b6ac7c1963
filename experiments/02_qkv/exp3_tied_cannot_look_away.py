"""Tied projections (W_q = W_k) cannot learn to look at another token rather than at itself: on a
partner lookup that separate projections learn perfectly, a tied self-attention layer stalls
near 53% (1/2 + 1/32) and never lets both tokens of a pair prefer each other.

The task: the 16 symbols form 8 fixed couples (0 with 1, 2 with 3, ...). A sequence holds both
symbols of 4 couples, shuffled, each token carrying a random value out of 16, and every token must
output the value carried by its partner. A single self-attention layer (minimind_ref's
`scaled_dot_product_attention`, no mask, a linear read-out) trains on it twice with the same loop
and data: once with separate W_q and W_k, once with k_proj sharing q_proj's weight.

With W_q = W_k the scores form a Gram matrix, s_ij = q_i . q_j / sqrt(d), and Cauchy-Schwarz gives
s_ij <= max(s_ii, s_jj): of two partners, at least one scores itself at least as high as the
other. The best a tied layer can then do is to score self and partner equally and average the
two values, after which it cannot tell which of them is its partner's: right about half the time,
plus 1/16 of the other half when both values agree, so 1/2 + 1/32 = 53.1%.

Why it matters: most useful attention looks elsewhere: at the previous word, at a subject, at the
key that matches. Separate query and key projections are what let a token ask for something other
than itself.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from labkit import Experiment, float_in, int_in, print_table, show_heatmaps, train
from minimind_ref import scaled_dot_product_attention

NUM_SYMBOLS = 16  # couples (0, 1), (2, 3), ...: the partner of s is s ^ 1
NUM_VALUES = 16
HELD_OUT = 2000
SEPARATE_ACCURACY = 0.9  # separate projections: at least 90% right
TIED_ACCURACY = 0.65  # tied: at most 65% right (the split-evenly ceiling is 53.1%)


def add_arguments(parser):
    parser.add_argument("--couples", type=int_in(2, NUM_SYMBOLS // 2), default=4,
                        help=f"couples per sequence, T = 2 x couples tokens, at most {NUM_SYMBOLS // 2} (default 4)")
    parser.add_argument("--width", type=int_in(1, 1024), default=32,
                        help="width D of queries, keys and values (default 32)")
    parser.add_argument("--steps", type=int_in(1, 5000), default=300,
                        help="training steps for each layer (default 300)")
    parser.add_argument("--batch", type=int_in(1, 1024), default=64, help="sequences per training step (default 64)")
    parser.add_argument("--lr", type=float_in(0.0, 10.0, low_open=True), default=1e-2,
                        help="peak learning rate (default 1e-2)")


MAX_EXAMPLES = 2 ** 19  # --steps x --batch: every training batch is drawn up front and kept


def check_arguments(args):
    if args.steps * args.batch > MAX_EXAMPLES:
        return (f"--steps x --batch (training examples, all drawn up front) must be at most {MAX_EXAMPLES}, "
                f"got {args.steps} x {args.batch} = {args.steps * args.batch}")
    return None


def make_sequences(count: int, couples: int, generator: torch.Generator):
    """Returns ((symbols [N, T], values [N, T]), partner's value [N, T]), T = 2 x couples."""
    chosen = torch.rand(count, NUM_SYMBOLS // 2, generator=generator).argsort(-1)[:, :couples]  # [N, couples]
    symbols = torch.cat([2 * chosen, 2 * chosen + 1], dim=1)  # both members of each couple
    order = torch.rand(count, 2 * couples, generator=generator).argsort(-1)
    symbols = symbols.gather(1, order)  # shuffled
    values = torch.randint(0, NUM_VALUES, (count, 2 * couples), generator=generator)
    return (symbols, values), values.gather(1, partner_positions(symbols))


def partner_positions(symbols: torch.Tensor) -> torch.Tensor:
    """[N, T] -> [N, T]: where in its sequence each token's partner (symbol ^ 1) sits."""
    return (symbols[:, None, :] == (symbols ^ 1)[:, :, None]).float().argmax(-1)


class PartnerLookup(nn.Module):
    """One self-attention layer over [symbol one-hot | value one-hot] tokens, and a read-out."""

    def __init__(self, width: int, tied: bool):
        super().__init__()
        features = NUM_SYMBOLS + NUM_VALUES
        self.q_proj = nn.Linear(features, width, bias=False)
        self.k_proj = nn.Linear(features, width, bias=False)
        if tied:
            self.k_proj.weight = self.q_proj.weight  # one Parameter: W_k = W_q always, also after training
        self.v_proj = nn.Linear(features, width, bias=False)
        self.readout = nn.Linear(width, NUM_VALUES, bias=False)

    def forward(self, inputs, return_weights: bool = False):
        symbols, values = inputs
        width = NUM_SYMBOLS + NUM_VALUES
        x = F.one_hot(symbols, width) + F.one_hot(values + NUM_SYMBOLS, width)  # [B, T, S+V]
        x = x.to(self.q_proj.weight.dtype)
        q, k, v = (proj(x)[:, None] for proj in (self.q_proj, self.k_proj, self.v_proj))  # [B, 1, T, D]
        out, weights = scaled_dot_product_attention(q, k, v, return_weights=True)  # no mask: all see all
        logits = self.readout(out[:, 0])  # [B, T, values]
        return (logits, weights[:, 0]) if return_weights else logits


def lookup_loss(logits: torch.Tensor, answers: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), answers.reshape(-1))


def evaluate(model: PartnerLookup, inputs, answers) -> dict:
    """Accuracy, and where the weight goes, measured in float64 so that the Cauchy-Schwarz count
    is not decided by float32 rounding between two equal scores."""
    model = model.double()
    with torch.no_grad():
        logits, weights = model(inputs, return_weights=True)  # [N, T, values], [N, T, T]
    model.float()
    partner = partner_positions(inputs[0])  # [N, T]
    on_partner = weights.gather(-1, partner[..., None])[..., 0]  # [N, T]
    on_self = torch.diagonal(weights, dim1=-2, dim2=-1)  # [N, T]
    prefers = on_partner > on_self * (1 + 1e-9)  # puts more weight on the partner than on itself
    both = prefers & prefers.gather(1, partner)  # ... and so does the partner, the other way
    return {
        "accuracy": (logits.argmax(-1) == answers).float().mean().item(),
        "on_partner": on_partner.mean().item(),
        "on_self": on_self.mean().item(),
        "prefers": prefers.float().mean().item(),
        "both": both.float().mean().item(),  # the fraction of tokens whose couple both look across
        "weights": weights.float(),
    }


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args
    # Tiny tensors: one thread is faster than two, since handing each small operation between
    # threads costs more than its arithmetic (and far more on a busy machine).
    torch.set_num_threads(1)

    generator = torch.Generator().manual_seed(args.seed)
    stream = [make_sequences(args.batch, args.couples, generator) for _ in range(args.steps)]
    inputs, answers = make_sequences(HELD_OUT, args.couples, torch.Generator().manual_seed(10_000 + args.seed))
    ceiling = 0.5 + 0.5 / NUM_VALUES  # split evenly between self and partner, then guess which is which

    results, logs = {}, {}
    for name in ("separate", "tied"):
        torch.manual_seed(args.seed)  # the same initial weights for both (W_k is then overwritten by W_q)
        model = PartnerLookup(args.width, tied=name == "tied")
        logs[name] = train(model, lambda step, g: stream[step], steps=args.steps, lr=args.lr, seed=args.seed,
                           loss_fn=lookup_loss)
        results[name] = evaluate(model, inputs, answers)
        if name == "tied":
            assert model.k_proj.weight is model.q_proj.weight

    T = 2 * args.couples
    print(f"{HELD_OUT} fresh sequences of T = {T} tokens ({args.couples} couples); each layer trained "
          f"{args.steps} steps x {args.batch} sequences")
    print()
    rows = []
    for name, r in results.items():
        rows.append([f"{name} W_q, W_k" if name == "separate" else "tied W_k = W_q", logs[name].final_loss(),
                     r["accuracy"], r["on_partner"], r["on_self"], r["prefers"], r["both"]])
    print_table(["projections", "final loss", "accuracy", "weight on partner", "weight on self",
                 "prefers partner", "couple both do"], rows, ["", ".3f", ".3f", ".3f", ".3f", ".3f", ".3f"])
    print()
    print(f"chance: 1/{NUM_VALUES} = {1 / NUM_VALUES:.4f}; splitting evenly between self and partner and guessing: "
          f"1/2 + 1/{2 * NUM_VALUES} = {ceiling:.4f}; a fair coin between two values has a loss of ln 2 = "
          f"{math.log(2):.3f}")
    print("prefers partner: more weight on the partner than on itself; couple both do: and its partner does too")
    print()

    s, t = results["separate"], results["tied"]
    exp.claim(s["accuracy"] >= SEPARATE_ACCURACY and s["both"] >= SEPARATE_ACCURACY,
              f"separate W_q, W_k learn the lookup: {100 * s['accuracy']:.1f}% right (must be >= "
              f"{100 * SEPARATE_ACCURACY:.0f}%), and in {100 * s['both']:.1f}% of the couples both tokens look at "
              f"each other more than at themselves")
    exp.claim(t["accuracy"] <= TIED_ACCURACY,
              f"tied W_k = W_q stall: {100 * t['accuracy']:.1f}% right (must be <= {100 * TIED_ACCURACY:.0f}%), near "
              f"the {100 * ceiling:.1f}% of splitting the weight evenly between self and partner "
              f"({t['on_self']:.2f} on self, {t['on_partner']:.2f} on partner)")
    exp.claim(t["both"] == 0.0,
              f"tied, as Cauchy-Schwarz requires: in none of the {HELD_OUT * args.couples} couples do both tokens put "
              f"more weight on the partner than on themselves (measured: {100 * t['both']:.1f}%)")

    example = 0
    symbols, values = (tensor[example].tolist() for tensor in inputs)
    labels = [f"s{sym}:v{val}" for sym, val in zip(symbols, values)]
    fig = show_heatmaps(torch.stack([s["weights"][example], t["weights"][example]]), x_labels=labels,
                        annotate=T <= 10, titles=["separate W_q, W_k", "tied W_k = W_q"],
                        suptitle="Weights of one fresh sequence (symbol:value; partners are s2m and s2m+1):\n"
                                 "separate projections look at the partner, tied ones split between partner and self")
    exp.save(fig, "weights")
    return exp.finish()


if __name__ == "__main__":
    raise SystemExit(main())

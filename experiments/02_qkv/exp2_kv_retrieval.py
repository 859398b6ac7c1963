"""One attention layer with learned W_q, W_k and W_v learns a key-value lookup in a few hundred
steps: on fresh examples it returns the value paired with the asked key far above chance, because
its query lands on the right key, and its key projection learns to read the key while its value
projection reads the value.

Each example is a small dictionary: S pairs (key, value) with distinct keys, drawn from 16 keys and
16 values, and T questions, each one of the S keys. The answer to a question is the value paired
with that key. A pair is one token whose features are the one-hot of its key next to the one-hot
of its value; a question is a token with only a key. The layer is cross-attention: the T questions
make the queries, the S pairs the keys and values, so its weights are [T, S]; minimind_ref's
`scaled_dot_product_attention` does the attention, and a linear read-out turns each output into
16 value scores. It trains with minimind_ref's shared `train` loop and a cross-entropy loss.

Why it matters: "attention is a soft dictionary lookup" is the usual one-line explanation of
queries, keys and values. Here it is made literal and then learned from examples: nobody tells
the layer which half of a pair is the key; it finds out that W_k must read the key half and W_v
the value half.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from labkit import Experiment, float_in, int_in, print_table, show_heatmaps, train
from minimind_ref import scaled_dot_product_attention

NUM_KEYS = 16
NUM_VALUES = 16
HELD_OUT = 2000  # fresh examples to measure on
ACCURACY = 0.9  # trained: at least 90% right on fresh examples
ON_KEY = 0.5  # trained: at least half of each query's weight on the right pair (1/S before)
ROLE_RATIO = 3.0  # trained: W_k reads the key half, W_v the value half, by at least this factor


def add_arguments(parser):
    parser.add_argument("--pairs", type=int_in(2, NUM_KEYS), default=8,
                        help=f"(key, value) pairs per example, S <= {NUM_KEYS} (default 8)")
    parser.add_argument("--questions", type=int_in(1, NUM_KEYS), default=4,
                        help="questions per example, T <= S (default 4)")
    parser.add_argument("--width", type=int_in(1, 1024), default=16,
                        help="width D of queries, keys and values (default 16)")
    parser.add_argument("--steps", type=int_in(1, 5000), default=200, help="training steps (default 200)")
    parser.add_argument("--batch", type=int_in(1, 1024), default=64, help="examples per training step (default 64)")
    parser.add_argument("--lr", type=float_in(0.0, 10.0, low_open=True), default=1e-2,
                        help="peak learning rate (default 1e-2)")


MAX_EXAMPLES = 2 ** 19  # --steps x --batch: every training batch is drawn up front and kept


def check_arguments(args):
    if args.questions > args.pairs:
        return f"--questions must be at most --pairs, got {args.questions} and {args.pairs}"
    if args.steps * args.batch > MAX_EXAMPLES:
        return (f"--steps x --batch (training examples, all drawn up front) must be at most {MAX_EXAMPLES}, "
                f"got {args.steps} x {args.batch} = {args.steps * args.batch}")
    return None


def make_examples(count: int, pairs: int, questions: int, generator: torch.Generator):
    """`count` random dictionaries. Returns ((asked [N, T], keys [N, S], values [N, S]), answers [N, T])."""
    keys = torch.rand(count, NUM_KEYS, generator=generator).argsort(-1)[:, :pairs]  # distinct keys
    values = torch.randint(0, NUM_VALUES, (count, pairs), generator=generator)  # values may repeat
    slots = torch.rand(count, pairs, generator=generator).argsort(-1)[:, :questions]  # which pairs are asked
    return (keys.gather(1, slots), keys, values), values.gather(1, slots)


class KeyValueLookup(nn.Module):
    """A single cross-attention layer: questions attend to pairs; a read-out names the value."""

    def __init__(self, width: int):
        super().__init__()
        features = NUM_KEYS + NUM_VALUES  # [key one-hot | value one-hot]
        self.q_proj = nn.Linear(features, width, bias=False)
        self.k_proj = nn.Linear(features, width, bias=False)
        self.v_proj = nn.Linear(features, width, bias=False)
        self.readout = nn.Linear(width, NUM_VALUES, bias=False)

    @staticmethod
    def features(asked, keys, values):
        """One-hot token features: a question has only its key, a pair its key and its value."""
        width = NUM_KEYS + NUM_VALUES
        questions = F.one_hot(asked, width).float()  # [B, T, K+V]
        pairs = F.one_hot(keys, width).float() + F.one_hot(values + NUM_KEYS, width).float()  # [B, S, K+V]
        return questions, pairs

    def forward(self, inputs, return_weights: bool = False):
        questions, pairs = self.features(*inputs)
        q = self.q_proj(questions)[:, None]  # [B, 1, T, D]: one head
        k = self.k_proj(pairs)[:, None]  # [B, 1, S, D]
        v = self.v_proj(pairs)[:, None]  # [B, 1, S, D]
        out, weights = scaled_dot_product_attention(q, k, v, return_weights=True)  # [B, 1, T, D], [B, 1, T, S]
        logits = self.readout(out[:, 0])  # [B, T, values]
        return (logits, weights[:, 0]) if return_weights else logits


def lookup_loss(logits: torch.Tensor, answers: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of the value scores [B, T, values] against the right values [B, T]."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), answers.reshape(-1))


def evaluate(model: KeyValueLookup, inputs, answers) -> dict:
    asked, keys, values = inputs
    with torch.no_grad():
        logits, weights = model(inputs, return_weights=True)  # [N, T, values], [N, T, S]
    right_slot = asked[:, :, None] == keys[:, None, :]  # [N, T, S]: the pair each question asks for
    # guessing the value of a random pair: right when that pair's value is the answer
    random_pair = (values[:, None, :] == answers[:, :, None]).float().mean(-1)  # [N, T]
    return {
        "accuracy": (logits.argmax(-1) == answers).float().mean().item(),
        "loss": lookup_loss(logits, answers).item(),
        "on_key": (weights * right_slot).sum(-1).mean().item(),
        "top_is_key": (weights.argmax(-1) == right_slot.float().argmax(-1)).float().mean().item(),
        "random_pair": random_pair.mean().item(),
        "weights": weights,
    }


def role_ratios(model: KeyValueLookup) -> tuple[float, float]:
    """How much more W_k reads the key half than the value half of a pair, and W_v the value half
    than the key half: the mean column norm of each half of the weight [D, K+V]."""
    def halves(weight):
        norms = weight.detach().norm(dim=0)  # one norm per input feature
        return norms[:NUM_KEYS].mean().item(), norms[NUM_KEYS:].mean().item()
    k_key, k_value = halves(model.k_proj.weight)
    v_key, v_value = halves(model.v_proj.weight)
    return k_key / k_value, v_value / v_key


def training_stream(steps: int, batch: int, pairs: int, questions: int, seed: int):
    """The examples `train` will draw, step by step, from a generator seeded with `seed`."""
    generator = torch.Generator().manual_seed(seed)
    return [make_examples(batch, pairs, questions, generator) for _ in range(steps)]


def seen_in_training(stream, inputs) -> int:
    """How many of the held-out dictionaries (same pairs in the same order) occur in the stream."""
    def signatures(keys, values):
        return {tuple(k) + tuple(v) for k, v in zip(keys.tolist(), values.tolist())}
    seen = set().union(*(signatures(ins[1], ins[2]) for ins, _ in stream))
    return len(signatures(inputs[1], inputs[2]) & seen)


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args
    # Tiny tensors: one thread is faster than two, since handing each small operation between
    # threads costs more than its arithmetic (and far more on a busy machine).
    torch.set_num_threads(1)
    S, T = args.pairs, args.questions

    model = KeyValueLookup(args.width)
    held_out = make_examples(HELD_OUT, S, T, torch.Generator().manual_seed(10_000 + args.seed))
    inputs, answers = held_out
    before = evaluate(model, inputs, answers)
    print_shapes(model, inputs, before, S, T, args.width)

    stream = training_stream(args.steps, args.batch, S, T, args.seed)
    log = train(model, lambda step, generator: stream[step], steps=args.steps, lr=args.lr, seed=args.seed,
                loss_fn=lookup_loss)
    after = evaluate(model, inputs, answers)
    k_ratio, v_ratio = role_ratios(model)
    overlap = seen_in_training(stream, inputs)
    fused_error = through_the_fused_kernel(model, inputs)
    print_results(log, before, after, overlap, k_ratio, v_ratio, fused_error, S, args.steps, args.batch)
    claim_lookup(exp, before, after, overlap, k_ratio, v_ratio, fused_error, S, T)
    draw_weights(exp, inputs, before, after, S)
    return exp.finish()


def print_shapes(model, inputs, before: dict, S: int, T: int, width: int) -> None:
    """The shapes of one batch on its way through the layer."""
    questions, pairs = model.features(*inputs)
    q = model.q_proj(questions)[:, None]
    k = model.k_proj(pairs)[:, None]
    print(f"cross-attention: T = {T} questions attend to S = {S} pairs, width D = {width}")
    print(f"  question tokens {tuple(questions.shape)} -> q {tuple(q.shape)}  [B, T, K+V] -> [B, H=1, T, D]")
    print(f"  pair tokens     {tuple(pairs.shape)} -> k, v {tuple(k.shape)}  [B, S, K+V] -> [B, H=1, S, D]")
    print(f"  weights {tuple(before['weights'][:, None].shape)} [B, H, T, S]; value scores "
          f"{tuple(model(inputs).shape)} [B, T, values]")
    print()



def through_the_fused_kernel(model, inputs) -> float:
    """The trained layer through torch's fused kernel: its largest difference from minimind_ref's."""
    with torch.no_grad():
        questions, pairs = model.features(*inputs)
        q, k, v = (proj(t)[:, None] for proj, t in
                   ((model.q_proj, questions), (model.k_proj, pairs), (model.v_proj, pairs)))
        fused = F.scaled_dot_product_attention(q, k, v)
        explicit = scaled_dot_product_attention(q, k, v)
    fused_error = (fused - explicit).abs().max().item()
    return fused_error


def print_results(log, before: dict, after: dict, overlap: int, k_ratio: float, v_ratio: float, fused_error: float,
                  S: int, steps: int, batch: int) -> None:
    chance = 1 / NUM_VALUES
    print(f"trained {steps} steps x {batch} examples: loss {log.losses[0]:.3f} -> {log.final_loss():.4f}")
    print(f"measured on {HELD_OUT} fresh examples ({overlap} of them occur in the training stream)")
    print()
    print_table(["", "accuracy", "loss", "weight on the right pair", "largest weight on it"],
                [["before training", before["accuracy"], before["loss"], before["on_key"], before["top_is_key"]],
                 ["after training", after["accuracy"], after["loss"], after["on_key"], after["top_is_key"]]],
                ["", ".3f", ".3f", ".3f", ".3f"])
    print()
    print(f"chance: 1/{NUM_VALUES} values = {chance:.4f}; the value of a random pair = {after['random_pair']:.3f}; "
          f"uniform weights put 1/S = {1 / S:.3f} on each pair")
    print(f"roles learned: W_k reads the key half {k_ratio:.1f}x more than the value half; "
          f"W_v reads the value half {v_ratio:.1f}x more than the key half")
    print(f"torch's fused SDPA on the trained layer: max difference from minimind_ref's {fused_error:.1e}")
    print()



def claim_lookup(exp, before: dict, after: dict, overlap: int, k_ratio: float, v_ratio: float, fused_error: float,
                 S: int, T: int) -> None:
    chance = 1 / NUM_VALUES
    exp.claim(after["accuracy"] >= ACCURACY and overlap == 0,
              f"the trained layer answers {100 * after['accuracy']:.1f}% of {T * HELD_OUT} questions on fresh "
              f"examples right (must be >= {100 * ACCURACY:.0f}%; chance {100 * chance:.2f}%, the value of a random "
              f"pair {100 * after['random_pair']:.1f}%, before training {100 * before['accuracy']:.1f}%)")
    exp.claim(after["on_key"] >= ON_KEY and after["top_is_key"] >= ACCURACY,
              f"the query lands on the right key: {after['on_key']:.2f} of its weight on the asked pair on average "
              f"(must be >= {ON_KEY}; uniform is 1/S = {1 / S:.3f}), the largest weight there for "
              f"{100 * after['top_is_key']:.1f}% of the questions")
    exp.claim(k_ratio >= ROLE_RATIO and v_ratio >= ROLE_RATIO,
              f"the projections took their roles: W_k reads the key half {k_ratio:.1f}x more than the value half, "
              f"W_v the value half {v_ratio:.1f}x more than the key half (each must be >= {ROLE_RATIO:g}x)")
    exp.claim(fused_error <= 1e-5,
              f"torch's fused scaled_dot_product_attention gives the same outputs with T = {T} queries and "
              f"S = {S} keys (max difference {fused_error:.1e})")



def draw_weights(exp, inputs, before: dict, after: dict, S: int) -> None:
    """One fresh example, before and after training."""
    example = 0
    asked, keys, values = (t[example] for t in inputs)
    x_labels = [f"k{key}:v{value}" for key, value in zip(keys.tolist(), values.tolist())]
    y_labels = [f"k{key}?" for key in asked.tolist()]
    maps = torch.stack([before["weights"][example], after["weights"][example]])  # [2, T, S]
    fig = show_heatmaps(maps, x_labels=x_labels, y_labels=y_labels, annotate=S <= 12,
                        titles=["before training", "after training"], xlabel="pair (key:value)",
                        ylabel="question", suptitle="Each question's weights over the pairs of one fresh "
                                                    "example: after training, on the asked key")
    exp.save(fig, "weights")


if __name__ == "__main__":
    raise SystemExit(main())

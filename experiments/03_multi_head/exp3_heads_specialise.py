"""Trained on a task whose every answer needs two tokens, the first token and the previous one, the
two heads of a small MiniMind split the work: one head looks at the first token, the other at the
previous token, and switching off one head erases exactly its half of the answer. A single head of
the same width learns the task too, by splitting one softmax between the two tokens.

The task. A sequence starts with a topic token (one of K) and goes on with random symbols (K of
them); at each position t >= 2 the model must output the pair (topic, symbol at t - 1), one of
K * K classes. The topic is always at position 0 and marked by its own token ids; the previous
symbol is always one step back. So every answer needs one content-based look (find the topic) and
one position-based look (the token before me). The model is MiniMind with one layer, hidden size
64 and 2 heads of width 32 (MHA), trained with the course's `train` loop.

What is measured: each head's average attention weight on the first token and on the previous
token; the accuracy of the topic half and of the symbol half of the answer; and the same after
ablating each head in turn, by zeroing its D features of the attention output before o_proj (a
forward pre-hook on o_proj: the head then adds nothing to the layer's output). As a control, the
same model with one head of width 64 is trained on the same data.

Why it matters: heads are separate attention patterns that run side by side and meet only in
o_proj. A common picture says one head can only attend to one thing; the control shows that is
wrong (a softmax can spread its weight over two tokens and the layers after it can read the blend),
but with two heads available, training gives each relation its own head, which makes the heads
readable and ablation a precise tool (module 09 reads the heads of a trained MiniMind this way).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from labkit import IGNORE_INDEX, Experiment, float_in, int_in, print_table, show_heatmaps, train
from labkit.i18n import phrase
from labkit.tiny_heads import ablated
from minimind_ref import MiniMindConfig, MiniMindForCausalLM

LEARNED = 0.99  # accuracy that counts as "learned the task"
FOCUSED = 0.8  # a head "looks at" a token when it puts at least this much weight there on average
SPREAD = 0.15  # the single head "splits" when it puts at least this much on each of the two tokens
KEPT = 0.95  # the half of the answer whose head was not ablated must stay at least this accurate
CHANCE_FACTOR = 2  # the ablated head's half must fall below twice chance (chance = 1/K)


def add_arguments(parser):
    parser.add_argument("--symbols", type=int_in(2, 32), default=6,
                        help="K: topics and symbols; the model names K x K classes (default 6)")
    parser.add_argument("--tokens", type=int_in(4, 128), default=12, help="sequence length T (default 12)")
    parser.add_argument("--heads", type=int_in(2, 16), default=2,
                        help="heads of the model (default 2); the ablation claims are checked for 2 heads, "
                             "one per relation")
    parser.add_argument("--hidden", type=int_in(4, 256), default=64, help="hidden size C (default 64)")
    parser.add_argument("--rope-theta", type=float_in(1.0, 1e12, low_open=True), default=1e6,
                        help="RoPE base, above 1 (default 1e6, MiniMind's)")
    parser.add_argument("--steps", type=int_in(1, 3000), default=300, help="training steps (default 300)")
    parser.add_argument("--batch", type=int_in(1, 1024), default=64, help="sequences per training step (default 64)")
    parser.add_argument("--eval", type=int_in(1, 10_000), default=1000,
                        help="held-out sequences measured (default 1000)")


MAX_TRAINED = 2 ** 34  # --steps x --batch x --tokens x max(--hidden, 64)^2, for each of the two models: 18
# times the defaults' arithmetic (a small model costs what one of width 64 does: the overhead of each step)
MAX_EVAL = 2 ** 26  # the held-out pass keeps [N, H, T, T] weights and [N, T, K*K] logits: 256 MiB each


def check_arguments(args):
    if args.hidden % args.heads or (args.hidden // args.heads) % 2:
        return (f"--heads must divide --hidden into heads of even width (RoPE), got heads={args.heads}, "
                f"hidden={args.hidden}")
    width = max(args.hidden, 64)
    trained = args.steps * args.batch * args.tokens * width ** 2
    if trained > MAX_TRAINED:
        return (f"--steps x --batch x --tokens x max(--hidden, 64)^2 must be at most {MAX_TRAINED}, got "
                f"{args.steps} x {args.batch} x {args.tokens} x {width}^2 = {trained}")
    measured = args.eval * args.tokens * max(args.heads * args.tokens, args.symbols ** 2)
    if measured > MAX_EVAL:
        return (f"--eval x --tokens x max(--heads x --tokens, --symbols^2) must be at most {MAX_EVAL}, got "
                f"{args.eval} x {args.tokens} x {max(args.heads * args.tokens, args.symbols ** 2)} = {measured}")
    return None


# ------------------------------------------------------------------------------ the task


def topic_and_previous_batch(size: int, symbols: int, tokens: int, generator: torch.Generator):
    """Inputs [N, T]: a topic token (ids K .. 2K-1) then T - 1 random symbols (ids 0 .. K-1).
    Targets [N, T]: at t >= 2 the pair (topic, symbol at t - 1) as one class topic * K + symbol;
    positions 0 and 1 are skipped (IGNORE_INDEX: there is no previous symbol yet)."""
    topic = torch.randint(0, symbols, (size,), generator=generator)
    ids = torch.randint(0, symbols, (size, tokens), generator=generator)
    ids[:, 0] = symbols + topic
    targets = torch.full((size, tokens), IGNORE_INDEX)
    targets[:, 2:] = topic[:, None] * symbols + ids[:, 1:-1]
    return ids, targets


def build_model(heads: int, hidden: int, symbols: int, tokens: int, rope_theta: float = 1e6) -> MiniMindForCausalLM:
    """One-layer MiniMind, multi-head (a KV head per query head). Its K*K output ids name the pairs;
    the inputs use the first 2K of them, hence untied input and output embeddings."""
    config = MiniMindConfig(hidden_size=hidden, num_hidden_layers=1, num_attention_heads=heads,
                            num_key_value_heads=heads, vocab_size=symbols * symbols,
                            max_position_embeddings=tokens, tie_word_embeddings=False, rope_theta=rope_theta)
    return MiniMindForCausalLM(config)


# ------------------------------------------------------------------------------ ablation


def heads_ablated(model: MiniMindForCausalLM, heads, layer: int = 0):
    """Within the block, the given heads of `layer` add nothing: their D features of the attention
    output are zeroed on the way into o_proj (the course's shared ablation, in its zero mode)."""
    return ablated(model, [(layer, h) for h in heads], mode="zero")


# ------------------------------------------------------------------------------ measurements


@torch.no_grad()
def scores(model, ids, targets, symbols: int) -> dict:
    """Accuracy of the whole pair, of its topic half and of its symbol half, and the loss."""
    logits = model(ids).logits  # [N, T, K*K]
    scored = targets != IGNORE_INDEX
    predicted, wanted = logits.argmax(-1)[scored], targets[scored]
    return {"accuracy": (predicted == wanted).float().mean().item(),
            "topic": (predicted // symbols == wanted // symbols).float().mean().item(),
            "previous": (predicted % symbols == wanted % symbols).float().mean().item(),
            "loss": F.cross_entropy(logits[scored], wanted).item()}


@torch.no_grad()
def attention_mass(model, ids) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each head's mean weight on the first token and on the previous token, over queries t >= 2.
    Returns (first [H], previous [H], weights [N, H, T, T])."""
    weights = model(ids, output_attentions=True).attentions[0]  # [N, H, T, T]
    queries = torch.arange(2, ids.shape[1])
    first = weights[:, :, 2:, 0].mean(dim=(0, 2))
    previous = weights[:, :, queries, queries - 1].mean(dim=(0, 2))
    return first, previous, weights


def train_and_measure(heads: int, args, seed: int) -> dict:
    torch.manual_seed(seed)  # the initial weights
    model = build_model(heads, args.hidden, args.symbols, args.tokens, args.rope_theta)
    log = train(model, lambda step, g: topic_and_previous_batch(args.batch, args.symbols, args.tokens, g),
                steps=args.steps, lr=1e-2, seed=seed)
    held_out = topic_and_previous_batch(args.eval, args.symbols, args.tokens,
                                        torch.Generator().manual_seed(10_000 + seed))
    first, previous, weights = attention_mass(model, held_out[0])
    ablated = {}
    for h in range(heads if heads > 1 else 0):
        with heads_ablated(model, [h]):
            ablated[h] = scores(model, *held_out, args.symbols)
    return {"model": model, "log": log, "held_out": held_out, "first": first, "previous": previous,
            "weights": weights, "scores": scores(model, *held_out, args.symbols), "ablated": ablated}


def role(first: float, previous: float) -> str:
    if first >= FOCUSED:
        return phrase("first token")
    if previous >= FOCUSED:
        return phrase("previous token")
    return phrase("mixed")


# ------------------------------------------------------------------------------ the figure


def plot(multi: dict, single: dict, symbols: int):
    ids = multi["held_out"][0][0]
    labels = [f"T{int(ids[0]) - symbols}"] + [str(int(i)) for i in ids[1:]]
    heads = multi["weights"].shape[1]
    maps = torch.cat([multi["weights"][0], single["weights"][0]])  # [H + 1, T, T]
    titles = [phrase(f"{heads} heads: head {h} ({role(multi['first'][h], multi['previous'][h])})")
              for h in range(heads)]
    heatmaps = show_heatmaps(maps, x_labels=labels, titles=titles + [phrase("1 head of twice the width")],
                             suptitle=f"Attention on one held-out sequence ({labels[0]} = topic "
                                      f"{labels[0][1:]}, then symbols)")

    fig, ax = plt.subplots(figsize=(7, 3.6))
    names = [phrase("no ablation")] + [phrase(f"head {h} off\n({role(multi['first'][h], multi['previous'][h])})")
                                       for h in range(heads)]
    results = [multi["scores"]] + [multi["ablated"][h] for h in range(heads)]
    positions = torch.arange(len(names)).float()
    for offset, (key, label) in zip((-0.2, 0.2), (("topic", "topic half right"), ("previous", "symbol half right"))):
        ax.bar(positions + offset, [r[key] for r in results], width=0.4, label=label)
    ax.axhline(1 / symbols, color="black", ls=":", lw=1, label=f"chance, 1/{symbols}")
    ax.set(xticks=positions.tolist(), xticklabels=names, ylim=(0, 1.3), yticks=[0, 0.2, 0.4, 0.6, 0.8, 1.0],
           ylabel="accuracy on held-out sequences", title="Ablating a head erases its half of the answer")
    ax.legend(fontsize=8, loc="upper center", ncol=3, frameon=False)
    fig.tight_layout()
    return heatmaps, fig


# ------------------------------------------------------------------------------ main


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args
    torch.set_num_threads(1)  # tiny matrices: one thread is fastest on a shared machine
    K = args.symbols
    print(f"Task: topic token + {args.tokens - 1} symbols; answer at t >= 2 = (topic, symbol t-1), {K} x {K} = "
          f"{K * K} classes. Model: 1 layer, hidden {args.hidden}, trained {args.steps} steps of {args.batch}.")
    print()
    multi = train_and_measure(args.heads, args, args.seed)
    single = train_and_measure(1, args, args.seed)
    print_heads_and_ablation(multi, single, args)
    claim_specialisation(exp, multi, single, args)
    heatmaps, bars = plot(multi, single, K)
    exp.save(heatmaps, "heatmaps")
    exp.save(bars, "ablation")
    return exp.finish()


def print_heads_and_ablation(multi: dict, single: dict, args) -> None:
    """Where each head looks, in the multi-head model and the one-head control; then the multi-head
    model's accuracy with each head zeroed."""
    K = args.symbols
    rows = []
    for name, run in ((phrase(f"{args.heads} heads"), multi), (phrase("1 head (control)"), single)):
        for h in range(run["first"].shape[0]):
            s = run["scores"]
            rows.append([name if h == 0 else "", h, run["first"][h].item(), run["previous"][h].item(),
                         role(run["first"][h], run["previous"][h]) if name != "1 head (control)" else phrase("both"),
                         f"{s['accuracy']:.3f}" if h == 0 else "", f"{run['log'].final_loss():.4f}" if h == 0 else ""])
    print_table(["model", "head", "weight on first token", "weight on previous", "role", "accuracy",
                 "final train loss"], rows, ["", "", ".3f", ".3f", "", "", ""])
    print()
    ablation_rows = [[phrase("none"), multi["scores"]["accuracy"], multi["scores"]["topic"],
                      multi["scores"]["previous"], multi["scores"]["loss"]]]
    for h, s in multi["ablated"].items():
        ablation_rows.append([phrase(f"head {h} ({role(multi['first'][h], multi['previous'][h])})"), s["accuracy"],
                              s["topic"], s["previous"], s["loss"]])
    print(f"Ablation of the {args.heads}-head model, on {args.eval} held-out sequences (chance for one half: "
          f"1/{K} = {1 / K:.3f}):")
    print()
    print_table(["head zeroed", "pair accuracy", "topic half", "symbol half", "loss"], ablation_rows,
                ["", ".3f", ".3f", ".3f", ".3f"])
    print()



def claim_specialisation(exp, multi: dict, single: dict, args) -> None:
    K = args.symbols
    exp.claim(multi["scores"]["accuracy"] >= LEARNED,
              f"the {args.heads}-head model learns the task: {multi['scores']['accuracy']:.3f} of held-out "
              f"answers right (at least {LEARNED})")
    first_heads = [h for h in range(args.heads) if multi["first"][h] >= FOCUSED]
    previous_heads = [h for h in range(args.heads) if multi["previous"][h] >= FOCUSED]
    exp.claim(first_heads and previous_heads,
              f"the heads specialise: head(s) {first_heads} put at least {FOCUSED} of their weight on the first "
              f"token, head(s) {previous_heads} on the previous token (weights on first "
              f"{[round(v, 3) for v in multi['first'].tolist()]}, on previous "
              f"{[round(v, 3) for v in multi['previous'].tolist()]})")
    if args.heads == 2 and len(first_heads) == 1 and len(previous_heads) == 1:
        f, p = multi["ablated"][first_heads[0]], multi["ablated"][previous_heads[0]]
        exp.claim(f["topic"] < CHANCE_FACTOR / K and f["previous"] >= KEPT
                  and p["previous"] < CHANCE_FACTOR / K and p["topic"] >= KEPT,
                  f"ablating the first-token head drops the topic half to {f['topic']:.3f} and keeps the symbol "
                  f"half at {f['previous']:.3f}; ablating the previous-token head drops the symbol half to "
                  f"{p['previous']:.3f} and keeps the topic half at {p['topic']:.3f} (chance 1/{K} = {1 / K:.3f}; "
                  f"dropped below {CHANCE_FACTOR}/{K}, kept at least {KEPT})")
    elif args.heads == 2:
        exp.claim(False, "with 2 heads, one head per relation (needed for the ablation claim)")
    else:
        print(f"(With {args.heads} heads several heads may share a relation; the ablation claim is checked "
              f"for 2 heads only. Read the table above.)")
    sf, sp = single["first"][0].item(), single["previous"][0].item()
    exp.claim(single["scores"]["accuracy"] >= LEARNED and sf >= SPREAD and sp >= SPREAD,
              f"control: one head of width {args.hidden} learns the task too ({single['scores']['accuracy']:.3f} "
              f"right) by splitting its weight, {sf:.3f} on the first token and {sp:.3f} on the previous one "
              f"(each at least {SPREAD}): one head is one weighted average, not one pointer")



if __name__ == "__main__":
    raise SystemExit(main())

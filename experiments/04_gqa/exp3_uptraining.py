"""Mean-pooling a trained multi-head model's key/value heads into fewer groups moves its outputs
away from the original, further the fewer groups it keeps; a short uptraining (a tenth of the
training steps) recovers most of the loss, far more than the same steps from a random start.

This is the recipe of the GQA paper (Ainslie et al., arXiv 2305.13245, section 2): to turn a
multi-head checkpoint into one with G key/value heads, split the H heads into G groups of adjacent
heads and replace each group's key and value projections by their mean (the rows of k_proj and
v_proj that belong to the group's heads, averaged); then continue pre-training for a small
proportion of the original steps (5% in the paper) so that the model adapts to its new structure.

Here the multi-head model is a small MiniMindForCausalLM (8 heads of size 8, one layer) trained for
a few seconds with the course's `train` on a lookup task: at every position, output the token 1
place back if the current token is even, 2 places back if it is odd. The converted models for
G = 8, 4, 2, 1 (8 is the original, 1 is MQA) are compared with it on held-out sequences: the
relative error of their logits, the KL divergence of their next-token distributions from the
original's, and task accuracy; then each is uptrained and compared again, next to a model of the
same shape trained from random weights for the same number of steps.

`--compare-first` adds the paper's other conversion, keeping only the first head of each group.

Why it matters: GQA can be had without pre-training a model from scratch, but the conversion alone
is not free; how much it costs depends on how different the heads of a group were.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

import minimind_ref as mm
from labkit import IGNORE_INDEX, Experiment, float_in, fraction, int_in, print_table, train

HEADS = 8
GROUPS = (8, 4, 2, 1)


def add_arguments(parser):
    parser.add_argument("--steps", type=int_in(20, 3000), default=200,
                        help="training steps of the multi-head model (default 200)")
    parser.add_argument("--lr", type=float_in(0.0, 10.0, low_open=True), default=5e-3,
                        help="learning rate, training and uptraining (default 5e-3)")
    parser.add_argument("--uptrain-fraction", type=fraction(), default=0.1,
                        help="uptraining steps as a fraction of --steps (default 0.1; the paper's main runs used 0.05)")
    parser.add_argument("--hidden", type=int_in(2 * HEADS, 256), default=64,
                        help=f"hidden size, a multiple of {2 * HEADS}: 8 heads of hidden/8 (default 64)")
    parser.add_argument("--layers", type=int_in(1, 4), default=1, help="layers (default 1)")
    parser.add_argument("--vocab", type=int_in(4, 4096), default=32, help="vocabulary size (default 32)")
    parser.add_argument("--compare-first", action="store_true",
                        help="also convert by keeping the first head of each group (no uptraining)")


MAX_COST = 2 ** 25  # --steps x --layers x --hidden^2, the training's arithmetic: 27 times the defaults'


def check_arguments(args):
    if args.hidden % (2 * HEADS):
        return f"--hidden must be a multiple of {2 * HEADS} ({HEADS} heads of even size), got {args.hidden}"
    cost = args.steps * args.layers * args.hidden ** 2
    if cost > MAX_COST:
        return (f"--steps x --layers x --hidden^2 must be at most {MAX_COST}, got {args.steps} x {args.layers} x "
                f"{args.hidden}^2 = {cost}")
    return None


# ------------------------------------------------------------------------------ the task


def lookback_batch(vocab: int, batch: int = 32, length: int = 24):
    """Random tokens; the target at position t is the token 1 back if token t is even, 2 back if odd.
    The first two positions, which may have nothing to look back to, are not scored."""
    def make(step, generator):
        ids = torch.randint(0, vocab, (batch, length), generator=generator)  # [B, T]
        source = torch.arange(length) - 1 - ids % 2  # [B, T]: the position to copy from
        targets = ids.gather(1, source.clamp(min=0))
        targets[:, :2] = IGNORE_INDEX
        return ids, targets
    return make


# ------------------------------------------------------------------------------ the conversion


def convert_kv_heads(model: mm.MiniMindForCausalLM, groups: int, how: str = "mean") -> mm.MiniMindForCausalLM:
    """A copy of `model` with `groups` key/value heads. The rows of k_proj and v_proj come in blocks
    of head_dim, one block per KV head; heads g * n_rep ... (g + 1) * n_rep - 1 form group g, as
    repeat_kv pairs them with query heads. how="mean" averages each group's blocks (the paper's
    recipe); how="first" keeps the group's first block."""
    config = model.config
    kv_heads, head_dim = config.num_key_value_heads, config.head_dim
    if kv_heads % groups:
        raise ValueError(f"groups ({groups}) must divide the model's {kv_heads} key/value heads.")
    converted = mm.MiniMindForCausalLM(config.replace(num_key_value_heads=groups))
    state = {}
    for name, weight in model.state_dict().items():
        if name.endswith(("k_proj.weight", "v_proj.weight")):
            blocks = weight.view(groups, kv_heads // groups, head_dim, -1)  # [G, n_rep, D, C]
            weight = (blocks.mean(dim=1) if how == "mean" else blocks[:, 0]).reshape(groups * head_dim, -1)
        state[name] = weight
    converted.load_state_dict(state)
    return converted.eval()


def kv_weight_distance(model: mm.MiniMindForCausalLM, converted: mm.MiniMindForCausalLM) -> float:
    """How far the converted K and V projections are from the originals, as each query head sees
    them: || W - repeat(W_pooled) || / || W || over every k_proj and v_proj."""
    n_rep = model.config.num_key_value_heads // converted.config.num_key_value_heads
    head_dim = model.config.head_dim
    diff = norm = 0.0
    pooled_state = converted.state_dict()
    for name, weight in model.state_dict().items():
        if name.endswith(("k_proj.weight", "v_proj.weight")):
            pooled = pooled_state[name].view(-1, head_dim, weight.shape[1])  # [G, D, C]
            repeated = pooled.repeat_interleave(n_rep, dim=0).reshape_as(weight)  # [H_kv D, C]
            diff += (weight - repeated).pow(2).sum().item()
            norm += weight.pow(2).sum().item()
    return (diff / norm) ** 0.5


@torch.no_grad()
def compare(model, reference_logits, ids, targets) -> dict:
    """Distances of model's outputs from the reference's, at the scored positions."""
    scored = targets != IGNORE_INDEX
    logits = model(ids).logits[scored]  # [N, V]
    reference = reference_logits[scored]
    kl = F.kl_div(logits.log_softmax(-1), reference.log_softmax(-1), log_target=True, reduction="batchmean")
    return {"rel": ((logits - reference).norm() / reference.norm()).item(),
            "kl": kl.item(),  # KL(reference || model), mean per position, in nats
            "acc": (logits.argmax(-1) == targets[scored]).float().mean().item()}


def plot(results, groups):
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    x = range(len(groups))
    for key, ax, title in (("rel", axes[0], "relative error of the logits"),
                           ("kl", axes[1], "KL(MHA || converted), nats per token"),
                           ("acc", axes[2], "task accuracy")):
        for label, style in (("mean-pooled", "o-"), ("mean-pooled, then uptrained", "s-"),
                             ("first head kept", "^:"), ("random start, same steps", "x--")):
            values = [results[label][g][key] if g in results.get(label, {}) else float("nan") for g in groups]
            if any(v == v for v in values):
                ax.plot(x, values, style, label=label)
        ax.set_xticks(list(x), [f"{g}\n{'MHA' if g == HEADS else 'MQA' if g == 1 else f'GQA-{g}'}" for g in groups])
        ax.set(title=title, xlabel="key/value heads (groups)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9, frameon=False)
    fig.suptitle("Converting a trained 8-head model to fewer key/value heads")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


# ------------------------------------------------------------------------------ main


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args
    torch.set_num_threads(1)  # tiny matrices: one thread is as fast, and steadier on a shared machine
    config = mm.MiniMindConfig(hidden_size=args.hidden, num_hidden_layers=args.layers, num_attention_heads=HEADS,
                               num_key_value_heads=HEADS, vocab_size=args.vocab, max_position_embeddings=64)
    task = lookback_batch(args.vocab)
    up_steps = max(1, round(args.uptrain_fraction * args.steps))
    mha, reference, ids, targets = train_the_mha_model(config, task, up_steps, args)
    results, weight_distance = convert_and_uptrain(mha, config, task, up_steps, reference, ids, targets, args)
    print_results(results, weight_distance)
    claim_uptraining(exp, results, weight_distance, up_steps)
    exp.save(plot(results, GROUPS), "distance")
    return exp.finish()


def train_the_mha_model(config, task, up_steps: int, args):
    """The multi-head model every conversion starts from, and its logits on held-out sequences."""
    mha = mm.MiniMindForCausalLM(config)
    log = train(mha, task, steps=args.steps, lr=args.lr, seed=args.seed)
    ids, targets = lookback_batch(args.vocab, batch=64)(0, torch.Generator().manual_seed(10_000 + args.seed))
    with torch.no_grad():
        reference = mha(ids).logits  # [B, T, V]
    print(f"MHA model: hidden {args.hidden}, {HEADS} heads of size {config.head_dim}, {args.layers} layer(s); "
          f"trained {args.steps} steps in {log.seconds:.1f} s, final loss {log.final_loss():.4f}; "
          f"held-out accuracy {compare(mha, reference, ids, targets)['acc']:.3f} (chance {1 / args.vocab:.3f})")
    print(f"Uptraining: {up_steps} steps ({100 * up_steps / args.steps:.0f}% of the training steps), lr {args.lr:g}.")
    print()
    return mha, reference, ids, targets


def convert_and_uptrain(mha, config, task, up_steps: int, reference, ids, targets, args):
    """For each number of KV heads: mean-pool the K/V heads, then uptrain; a random start trained
    as many steps beside it (and, with --compare-first, the first head of each group kept)."""
    results = {"mean-pooled": {}, "mean-pooled, then uptrained": {}, "random start, same steps": {}}
    if args.compare_first:
        results["first head kept"] = {}
    weight_distance = {}
    for groups in GROUPS:
        pooled = convert_kv_heads(mha, groups)
        weight_distance[groups] = kv_weight_distance(mha, pooled)
        results["mean-pooled"][groups] = compare(pooled, reference, ids, targets)
        if args.compare_first:
            results["first head kept"][groups] = compare(
                convert_kv_heads(mha, groups, "first"), reference, ids, targets)
        if groups == HEADS:
            continue
        train(pooled, task, steps=up_steps, lr=args.lr, seed=args.seed + 1)
        results["mean-pooled, then uptrained"][groups] = compare(pooled, reference, ids, targets)
        torch.manual_seed(args.seed + 2)
        scratch = mm.MiniMindForCausalLM(config.replace(num_key_value_heads=groups))
        train(scratch, task, steps=up_steps, lr=args.lr, seed=args.seed + 1)
        results["random start, same steps"][groups] = compare(scratch, reference, ids, targets)
    return results, weight_distance


def print_results(results: dict, weight_distance: dict) -> None:
    rows = []
    for label, by_groups in results.items():
        for groups, r in by_groups.items():
            distance = f"{weight_distance[groups]:.3f}" if label == "mean-pooled" else ""
            rows.append([label, groups, distance, r["rel"], r["kl"], r["acc"]])
    print_table(["model", "KV heads", "K/V weight distance", "logit rel. error", "KL (nats)", "accuracy"],
                rows, ["", "d", "", ".3f", ".3f", ".3f"])
    print()
    print("K/V weight distance: || W - repeat(pooled W) || / || W || over every k_proj and v_proj. KL: "
          "KL(MHA || model), mean per scored position. All on 64 held-out sequences.")
    print()



def claim_uptraining(exp, results: dict, weight_distance: dict, up_steps: int) -> None:
    pooled, uptrained, scratch = (results[k] for k in ("mean-pooled", "mean-pooled, then uptrained",
                                                       "random start, same steps"))
    smaller = GROUPS[1:]
    exp.claim(pooled[HEADS]["rel"] < 1e-5 and weight_distance[HEADS] == 0.0,
              f"with {HEADS} groups of one head the conversion changes nothing: the same weights, logits equal "
              f"to float32 rounding (relative error {pooled[HEADS]['rel']:.1e})")
    exp.claim(all(weight_distance[a] < weight_distance[b] for a, b in zip(GROUPS, GROUPS[1:])),
              "the pooled K/V weights move further from the originals at every halving of the groups: "
              + " < ".join(f"{weight_distance[g]:.3f}" for g in GROUPS))
    exp.claim(all(pooled[a]["kl"] < pooled[b]["kl"] for a, b in zip(GROUPS, GROUPS[1:]))
              and pooled[smaller[0]]["acc"] > pooled[smaller[-1]]["acc"],
              "so do the outputs: KL from the MHA model " + " < ".join(f"{pooled[g]['kl']:.2f}" for g in GROUPS)
              + f" nats for {', '.join(map(str, GROUPS))} groups; accuracy falls from "
              f"{pooled[HEADS]['acc']:.2f} to {pooled[smaller[-1]]['acc']:.2f}")
    exp.claim(all(uptrained[g]["kl"] < 0.5 * pooled[g]["kl"]
                  and uptrained[g]["acc"] > pooled[g]["acc"] for g in smaller),
              f"{up_steps} steps of uptraining recover most of it: KL " + ", ".join(
                  f"{pooled[g]['kl']:.2f} -> {uptrained[g]['kl']:.2f}" for g in smaller)
              + " (less than half at every G), accuracy " + ", ".join(
                  f"{pooled[g]['acc']:.2f} -> {uptrained[g]['acc']:.2f}" for g in smaller))
    exp.claim(all(uptrained[g]["acc"] > scratch[g]["acc"] for g in smaller),
              f"the pooled start is worth keeping: after the same {up_steps} steps, a random start reaches accuracy "
              + ", ".join(f"{scratch[g]['acc']:.2f}" for g in smaller) + " against " + ", ".join(
                  f"{uptrained[g]['acc']:.2f}" for g in smaller))



if __name__ == "__main__":
    raise SystemExit(main())

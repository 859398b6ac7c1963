"""The grader's ladder: eleven stages, each adding one thing to the ones before.

Stages 1 to 10 check the forward pass, cheapest first; stage 11 checks the backward pass.
Stages 1 to 9 test one attention layer at a time. Each layer of a small random MiniMind (hidden 64,
two layers; `labkit.random_minimind`) and the learner's layer built for the same place, with the
same weights loaded strictly, get the same inputs: hidden states, RoPE angles, a mask, a KV cache
of their own. Their outputs are compared three ways, so that a difference can be placed: the
attention weights (batch, head, query, key), the heads joined just before `o_proj` (batch, query,
head) and the output (batch, query). Stage 10 swaps the learner's layer into every block of the
model and compares the logits and greedy generation with transformers' Llama and Qwen3 twins.
Stage 11 trains: one layer's gradients with respect to its input and every weight, for a fixed
upstream gradient, compared with the reference's (`Outcome.grads`). It comes last because only a
layer whose forward is right everywhere has gradients worth comparing: what differs there is the
backward alone (a `.detach()`, an in-place change that autograd cannot see or cannot undo).

A stage is data (`Stage`): its title, what it adds, the config it changes, and the episodes it runs
(`Episode`: a dtype and a list of calls that share each layer's cache). `run_stage` returns what
each call gave (`Records`), which `first_difference` compares with the reference and
`same_behaviour` with a planted mistake.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import torch
from torch import nn

import minimind_ref as mm
from labkit.i18n import phrase, tr
from labkit.models import random_minimind

from .guard import Misuse, learner_line

# The small MiniMind every stage starts from; a stage changes only what it tests.
BASE = MappingProxyType(dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                             head_dim=16, vocab_size=64, max_position_embeddings=64))

# |actual - expected| <= ATOL + RTOL * |expected|. float32: a learner's own order of operations
# stays within ~1e-6 of the reference on these sizes; every planted mistake is off by more than 1e-2.
TOLERANCE = MappingProxyType({torch.float32: (1e-4, 1e-4), torch.float16: (1e-2, 1e-2)})


@dataclass
class Call:
    """One forward of a layer: x [B, T, C], angles (cos, sin), a mask, whether it uses the cache."""

    label: str
    x: torch.Tensor | None = None  # None in stage 10, whose calls are whole-model checks
    cos: torch.Tensor | None = None
    sin: torch.Tensor | None = None
    attn_mask: torch.Tensor | None = None
    cached: bool = False
    first_position: int = 0  # the absolute position of the first query (after a cache: its length)
    real: torch.Tensor | None = None  # [B, T] bool: rows to compare (pad queries are not read)
    grad_output: torch.Tensor | None = None  # [B, T, C]: set in stage 11, the gradient fed to the output


@dataclass
class Episode:
    label: str
    calls: list[Call]
    dtype: torch.dtype = torch.float32


@dataclass(frozen=True)
class Stage:
    key: str
    title: str
    adds: str  # what this stage tests that the earlier ones did not
    module: str  # where that is taught
    config: Mapping = field(default_factory=dict)
    episodes: Callable[[mm.MiniMindConfig, torch.Generator], list[Episode]] | None = None  # None: the whole model

    def __post_init__(self):  # read-only, as the worker's guard expects of the grader's data (guard.py)
        object.__setattr__(self, "config", MappingProxyType(dict(self.config)))

    def make_config(self) -> mm.MiniMindConfig:
        return mm.MiniMindConfig(**{**BASE, **self.config})


# -- the inputs of each stage ---------------------------------------------------------------------

# A call's and an episode's label is a key of the records, in English on both sides of the pipe;
# in_words() says it in the learner's language. The labels with numbers in them:
TOKENS = phrase("{count} tokens")
PREFILL = phrase("prefill of {count} tokens")
STEP = phrase("step {index}: 1 new token at position {first}")
STEPS = phrase("step {index}: {count} new tokens at positions {first}..{last}")
LABEL_PATTERNS = tuple((template, re.compile(re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>\\d+)", re.escape(template)) + "$"))
                       for template in (TOKENS, PREFILL, STEP, STEPS))


def in_words(label: str) -> str:
    """A call's or an episode's label in the learner's language (the pass it ran in too)."""
    own = call_label(label)
    suffix = tr(label[len(own):]) if len(own) < len(label) else ""
    for template, pattern in LABEL_PATTERNS:
        found = pattern.match(own)
        if found:
            return tr(template, **found.groupdict()) + suffix
    return tr(own) + suffix


def _hidden(config, batch, length, generator):
    return torch.randn(batch, length, config.hidden_size, generator=generator)


def _no_positions(config, length):
    """cos = 1, sin = 0: every rotation is the identity, as if RoPE were not there."""
    return torch.ones(length, config.head_dim), torch.zeros(length, config.head_dim)


def _angles(config, positions):
    cos, sin = mm.precompute_freqs_cis(config.head_dim, config.max_position_embeddings, config.rope_theta)
    return cos[positions], sin[positions]


def _all_visible(batch, length):
    return torch.ones(batch, 1, length, length, dtype=torch.bool)


def _bidirectional(positions: bool):
    """One call over 5 tokens (6 with RoPE), every key visible: scores, softmax, values, heads."""
    def episodes(config, generator):
        length = 6 if positions else 5
        cos, sin = _angles(config, torch.arange(length)) if positions else _no_positions(config, length)
        x = _hidden(config, 2, length, generator)
        call = Call(TOKENS.format(count=length), x, cos, sin, _all_visible(2, length))
        return [Episode(phrase("one call, every key visible"), [call])]
    return episodes


def _causal(config, generator):
    cos, sin = _angles(config, torch.arange(6))
    call = Call(TOKENS.format(count=6), _hidden(config, 2, 6, generator), cos, sin)
    return [Episode(phrase("one call, causal (attn_mask=None)"), [call])]


def _padded(config, generator):
    """Three sequences of 6, 3 and 1 tokens, left-padded to 6, in float32 and then float16."""
    lengths, length = [6, 3, 1], 6
    attention_mask = torch.tensor([[0] * (length - n) + [1] * n for n in lengths])
    positions = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    cos, sin = _angles(config, positions)  # [B, T, D]: each sequence counts from its first token
    mask = mm.combined_mask(attention_mask, length, length)  # [B, 1, T, T], causality included
    x = _hidden(config, len(lengths), length, generator)
    call = Call(phrase("3 sequences of 6, 3 and 1 tokens, left-padded"), x, cos, sin, mask,
                real=attention_mask.bool())
    return [Episode(phrase("a left-padded batch in float32"), [call]),
            Episode(phrase("the same batch in float16"), [copy.copy(call)], torch.float16)]


def _backward(config, generator):
    """One causal call whose output receives a fixed random gradient, as in a training step."""
    cos, sin = _angles(config, torch.arange(6))
    x = _hidden(config, 2, 6, generator)
    call = Call(phrase("6 tokens, then the backward pass"), x, cos, sin,
                grad_output=torch.randn(x.shape, generator=generator))
    return [Episode(phrase("one call, causal, output times a random gradient, backward"), [call])]


def _cached(prefill: int, steps: list[int]):
    """A prefill of `prefill` tokens into the cache, then steps of the given sizes, each seeing it all."""
    def episodes(config, generator):
        calls, start = [], 0
        for index, size in enumerate([prefill, *steps]):
            cos, sin = _angles(config, torch.arange(start, start + size))
            label = PREFILL.format(count=size) if index == 0 else \
                STEP.format(index=index, first=start) if size == 1 else \
                STEPS.format(index=index, count=size, first=start, last=start + size - 1)
            calls.append(Call(label, _hidden(config, 2, size, generator), cos, sin, cached=True, first_position=start))
            start += size
        return [Episode(phrase("prefill, then decoding with the KV cache"), calls)]
    return episodes


LADDER: tuple[Stage, ...] = (
    Stage("one_head", phrase("one head, no positions"),
          phrase("scores, their scale, the softmax and the weighted values, on one head with every key visible and "
                 "RoPE's angles at zero"), "01_attention_basics",
          dict(num_attention_heads=1, num_key_value_heads=1), _bidirectional(False)),
    Stage("all_heads", phrase("all heads"),
          phrase("four heads: splitting the projections into heads and joining them back"),
          "03_multi_head", dict(num_key_value_heads=4), _bidirectional(False)),
    Stage("grouped_kv", phrase("grouped key/value heads"),
          phrase("four query heads sharing two key/value heads (repeat_kv)"), "04_gqa", {}, _bidirectional(False)),
    Stage("rope", phrase("RoPE"), phrase("rotary position embeddings on queries and keys, positions 0..5"),
          "06_rope", {}, _bidirectional(True)),
    Stage("causal", phrase("the causal mask"), phrase("attn_mask=None: each token sees itself and the past only"),
          "05_masking", {}, _causal),
    Stage("padded", phrase("a padded batch"),
          phrase("a left-padded batch with its mask and per-sequence positions, in float32 and float16"),
          "05_masking", {}, _padded),
    Stage("prefill_decode", phrase("prefill, then cached decoding"),
          phrase("the KV cache: a prefill of 5 tokens, then three one-token steps that attend to it"),
          "07_kv_cache", {}, _cached(5, [1, 1, 1])),
    Stage("multi_token_step", phrase("several tokens after a cache"),
          phrase("steps of 3 and 2 tokens after a cache: fewer queries than keys, causal within the step"),
          "07_kv_cache", {}, _cached(4, [3, 2])),
    Stage("qk_norm", phrase("q/k norm (MiniMind3)"),
          phrase("qk_norm=True: each head's q and k RMS-normalised before RoPE, with the cache"),
          "02_qkv", dict(qk_norm=True), _cached(5, [1, 2])),
    Stage("whole_model", phrase("the whole model"),
          phrase("the layer in every block: logits of a padded batch and greedy generation, against transformers' "
                 "Llama (qk_norm off) and Qwen3 (on)"), "10_capstone"),
    Stage("backward", phrase("the backward pass"),
          phrase("training: the gradients of the layer's output with respect to its input x and to every weight, "
                 "on a causal batch with q/k norm on"), "10_capstone", dict(qk_norm=True), _backward),
)

STAGE = MappingProxyType({stage.key: stage for stage in LADDER})


def stage_number(stage: Stage) -> int:
    return LADDER.index(stage) + 1


# -- running a stage ------------------------------------------------------------------------------

@dataclass
class Raised:
    """A call that raised: compared with another by its type and message (text only, so that it
    crosses from the learner's process to the grader's)."""

    text: str

    @classmethod
    def of(cls, error: BaseException) -> Raised:
        return cls(str(error) if isinstance(error, Finding) else f"{type(error).__name__}: {error}")


class Finding(Exception):
    """What the learner's forward returned cannot be compared: not a pair, no weights when asked."""


@dataclass
class Outcome:
    out: torch.Tensor
    weights: torch.Tensor | None
    merged: torch.Tensor | None  # the heads joined, as o_proj receives them
    grads: dict[str, torch.Tensor | None] | None = None  # stage 11: "x" and each weight -> its gradient


# (episode index, layer or -1 for the whole model, call label) -> what the call gave
Records = dict[tuple[int, int, str], "Outcome | Raised"]


class Unfinished(Exception):
    """The learner's class raises NotImplementedError: the exercise is not written yet."""


# Each layer stage runs its episodes in two passes. The first asks for the weights, as every heatmap
# does. The second does not, as the model does when it generates or trains, so that a layer whose
# path without weights is another one (torch's fused SDPA) is checked too; and it builds the layer
# with dropout 0.5, still in eval mode, where dropout must do nothing. When that pass fails, a third
# (no weights, dropout 0) tells which of the two it was. Both run on the first layer only.
PASSES = ("weights", "plain")
PASS_LABEL = MappingProxyType({
    "weights": "", "plain": phrase(", without weights (output_attentions=False), dropout 0.5 in eval mode"),
    "plain_no_dropout": phrase(", without weights (output_attentions=False), dropout 0")})
PASS_DROPOUT = MappingProxyType({"weights": 0.0, "plain": 0.5, "plain_no_dropout": 0.0})


def call_label(label: str) -> str:
    """The call's own label, without its pass."""
    for suffix in PASS_LABEL.values():
        if suffix and label.endswith(suffix):
            return label[: -len(suffix)]
    return label


def pass_of(label: str) -> str:
    return next((name for name, suffix in PASS_LABEL.items() if suffix and label.endswith(suffix)), "weights")


def _guarded(guard, where: str):
    return guard.watch(where) if guard is not None else contextlib.nullcontext()


def construct(cls: type, config: mm.MiniMindConfig, layer_idx: int, guard=None) -> nn.Module:
    """`cls(config, layer_idx)`; NotImplementedError is Unfinished, any other error a Misuse that
    names the learner's line (a constructor that fails cannot be graded at all). The error is put
    in words inside the guard: its text is the learner's code too."""
    name = getattr(cls, "__name__", "your class")
    with _guarded(guard, tr("while building the layer")):
        try:
            return cls(config, layer_idx)
        except NotImplementedError as error:
            unfinished = Unfinished(str(error))
        except Exception as error:
            if guard is None:
                raise
            failure = Misuse(tr("{name}(config, layer_idx) fails: {error}{line}. The grader builds your layer as "
                                "the model does, with a MiniMindConfig (qk_norm={qk_norm}) and layer_idx={layer}.",
                                name=name, error=f"{type(error).__name__}: {error}", line=learner_line(error),
                                qk_norm=config.qk_norm, layer=layer_idx))
            unfinished = None
    if unfinished is not None:
        raise unfinished
    raise failure


def build_layer(cls: type, config: mm.MiniMindConfig, reference: nn.Module, layer_idx: int, dtype,
                guard=None) -> nn.Module | Raised:
    """The learner's layer for `layer_idx`, with the reference layer's weights loaded strictly (copies:
    the learner's layer never holds the reference's tensors) and then cast to `dtype`, or what
    loading them raised (a stage's finding)."""
    layer = construct(cls, config, layer_idx, guard)

    def load() -> nn.Module:
        layer.load_state_dict({name: value.clone() for name, value in reference.state_dict().items()}, strict=True)
        return layer.to(dtype).eval()
    return attempt(guard, tr("while loading the reference weights"), load)


def attempt(guard, where: str, work: Callable):
    """`work()` under the guard: its result, or what it raised as a Raised (put in words inside the
    guard: an error's text is the learner's code too). NotImplementedError is Unfinished."""
    with _guarded(guard, where):
        try:
            return work()
        except NotImplementedError as error:
            unfinished = Unfinished(str(error))
        except Exception as error:
            return Raised.of(error)
    raise unfinished


def _plain(value, what: str) -> torch.Tensor:
    """`value` detached, as a plain torch.Tensor: what crosses to the grader's process (isolate.py)."""
    if type(value) is not torch.Tensor:
        kind = tr("a {type}, a subclass of torch.Tensor", type=type(value).__name__) \
            if isinstance(value, torch.Tensor) else type(value).__name__
        raise Finding(tr("forward returned {kind} as its {what}: return a torch.Tensor", kind=kind, what=tr(what)))
    return value.detach()


def _stored(cache) -> int:
    """Positions the cache holds, over all its layers (a layer that writes another's slot still stores)."""
    return sum(cache.get_seq_length(layer) for layer in range(cache.num_layers))


def _cache_grew(cache, stored: int, new_tokens: int) -> None:
    """A cached call stores its new keys and values in the cache it is given, once: the contract."""
    grew = _stored(cache) - stored
    if grew != new_tokens:
        raise Finding(tr("past_key_values holds {grew} more positions after your call, expected {count}, the new "
                         "tokens: store the new keys and values in the cache you are given, once per call, and "
                         "attend to what it returns: k, v = past_key_values.update(self.layer_idx, k, v) (no cache "
                         "of your own)", grew=grew, count=new_tokens))


def _call(layer: nn.Module, call: Call, cache, dtype, ask: bool = True, guard=None,
          where: str = "") -> Outcome | Raised:
    """One forward of the learner's layer, and its backward in stage 11: what it returned, or what it
    raised. Everything that touches the learner's objects runs under the guard."""
    backward = call.grad_output is not None
    x = call.x.to(dtype).detach().requires_grad_(backward)
    given = cache if call.cached else None
    stored = _stored(cache) if given is not None else 0

    def forward() -> Outcome:
        merged = []
        projection = getattr(layer, "o_proj", None)
        hook = projection.register_forward_hook(lambda module, args, out: merged.append(
            args[0].detach().as_subclass(torch.Tensor))) if isinstance(projection, nn.Module) else None
        try:
            with torch.set_grad_enabled(backward):
                result = layer(x, (call.cos, call.sin), call.attn_mask, given, ask)
        finally:
            if hook is not None:
                hook.remove()
        if not (type(result) is tuple and len(result) == 2):
            raise Finding(tr("forward must return a pair (output, weights or None); it returned {what}",
                             what=type(result).__name__ if type(result) is not tuple else
                             tr("a tuple of {count}", count=len(result))))
        out, weights = result
        if ask and weights is None:
            raise Finding(tr("forward returned None for the weights although output_attentions=True: when asked, "
                             "return the attention weights [B, H, T, S] (every heatmap of the course reads them)"))
        if given is not None:
            _cache_grew(given, stored, x.shape[1])
        _plain(out, phrase("output"))
        return Outcome(out if backward else out.detach(), _plain(weights, phrase("weights")) if ask else None,
                       merged[0] if merged else None)

    outcome = attempt(guard, where, forward)
    if backward and isinstance(outcome, Outcome):
        def backward_pass() -> Outcome:
            grads = gradients(layer, x, outcome.out, call.grad_output.to(dtype))
            return Outcome(outcome.out.detach(), outcome.weights, outcome.merged, grads)
        outcome = attempt(guard, f"{where}, in the backward pass", backward_pass)
    return outcome


class BackwardError(RuntimeError):
    """The backward pass cannot run: the output is cut from the graph, or autograd refuses."""


def gradients(layer: nn.Module, x: torch.Tensor, out: torch.Tensor, grad_output: torch.Tensor) -> dict:
    """d(sum(out * grad_output)) with respect to x and each parameter; None for one the output
    does not depend on (a detached path)."""
    if not isinstance(out, torch.Tensor) or not out.requires_grad:
        raise BackwardError("the output does not require grad: the whole forward is cut from the autograd graph "
                         "(a .detach(), .data or torch.no_grad() on the way to the output)")
    names, parameters = zip(*layer.named_parameters())
    try:
        found = torch.autograd.grad(out, (x, *parameters), grad_output, allow_unused=True)
    except RuntimeError as error:  # autograd's own words, without its hint about anomaly detection
        raise BackwardError(f"the backward pass raises {type(error).__name__}: "
                            f"{str(error).split(' Hint:')[0]}") from None
    return dict(zip(("x", *names), found))


Draw = Callable[[mm.MiniMindConfig, int], mm.MiniMindForCausalLM]


def run_stage(cls: type, stage: Stage, seed: int = 0, passes: tuple[str, ...] = PASSES, guard=None,
              reads: Callable[[Call, mm.MiniMindConfig], Call] | None = None, draw: Draw = random_minimind) -> Records:
    """Run every episode of a layer stage, in each of `passes`, with layers of class `cls`; a call
    that raises ends its layer's episode. NotImplementedError anywhere raises Unfinished. `guard`
    (guard.py) watches each call into the learner's code. `reads`: each call's inputs changed, as
    a layer that ignores part of the contract reads them (contract.py). `draw(config, seed)`: the random
    MiniMind whose layers lend their weights, leaving torch's random state as drawing it does."""
    records: Records = {}
    model = draw(stage.make_config(), seed)
    drawn = torch.get_rng_state()  # each pass starts from it, as if it had drawn the model itself
    for pass_name in passes:
        config = stage.make_config().replace(dropout=PASS_DROPOUT[pass_name])
        torch.set_rng_state(drawn)
        episodes = stage.episodes(config, torch.Generator().manual_seed(seed))
        if reads is not None:
            episodes = [dataclasses.replace(episode, calls=[reads(call, config) for call in episode.calls])
                        for episode in episodes]
        suffix = PASS_LABEL[pass_name]
        # the second pass runs on layer 0 only: the layers of stages 1 to 9 differ by their weights
        # alone (each has its cache), and halving it keeps the added cost small
        layers = model.model.layers if pass_name == "weights" else model.model.layers[:1]
        for e, episode in enumerate(episodes):
            for layer_idx, block in enumerate(layers):
                layer = build_layer(cls, config, block.self_attn, layer_idx, episode.dtype, guard)
                if isinstance(layer, Raised):  # a load_state_dict that fails is this stage's finding
                    records[(e, layer_idx, "building the layer" + suffix)] = layer
                    continue
                cache = mm.KVCache(config, batch_size=episode.calls[0].x.shape[0])
                for call in episode.calls:
                    label = call.label + suffix
                    where = tr("in forward (stage {number}, layer {layer}, {episode}; {call})",
                               number=stage_number(stage), layer=layer_idx, episode=in_words(episode.label),
                               call=in_words(label))
                    records[(e, layer_idx, label)] = _call(layer, call, cache, episode.dtype, pass_name == "weights",
                                                           guard, where)
                    if isinstance(records[(e, layer_idx, label)], Raised):
                        break
    return records


def stage_inputs(stage: Stage, seed: int = 0) -> tuple[mm.MiniMindConfig, list[Episode]]:
    config = stage.make_config()
    return config, stage.episodes(config, torch.Generator().manual_seed(seed))


# -- the whole model ------------------------------------------------------------------------------

GENERATED = 8  # greedy tokens compared with transformers' generate


def _prompts(vocab: int, generator: torch.Generator):
    single = torch.randint(1, vocab, (1, 7), generator=generator)
    lengths = [7, 4]
    padded = torch.zeros(2, 7, dtype=torch.long)
    mask = torch.zeros(2, 7, dtype=torch.long)
    for row, n in enumerate(lengths):
        padded[row, 7 - n:] = torch.randint(1, vocab, (n,), generator=generator)
        mask[row, 7 - n:] = 1
    return single, padded, mask


def swapped_model(cls: type, model: mm.MiniMindForCausalLM, guard=None) -> mm.MiniMindForCausalLM | Raised:
    """A copy of `model` whose every block's attention is the learner's, same weights (or what
    loading them raised)."""
    learner = copy.deepcopy(model)
    for layer_idx, block in enumerate(learner.model.layers):
        layer = build_layer(cls, model.config, block.self_attn, layer_idx, torch.float32, guard)
        if isinstance(layer, Raised):
            return layer
        block.self_attn = layer
    return learner.eval()


def run_model(cls: type | None, seed: int = 0, guard=None, draw: Draw = random_minimind) -> Records:
    """Stage 10's records for layers of class `cls`, or for transformers' twins when `cls` is None,
    each in a copy of the model `draw(config, seed)` (see run_stage). Keys: (layout, -1, check), where
    check is "logits", "generate one" or "generate batch"."""
    from minimind_ref.oracles import hf_twin

    records: Records = {}
    for e, qk_norm in enumerate((False, True)):
        config = mm.MiniMindConfig(**{**BASE, "qk_norm": qk_norm})
        model = draw(config, seed)
        single, padded, mask = _prompts(config.vocab_size, torch.Generator().manual_seed(seed))
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        if cls is None:
            runner = hf_twin(model)
        else:
            runner = swapped_model(cls, model, guard)
            if isinstance(runner, Raised):
                records[(e, -1, "building the model")] = runner
                continue
        checks = {
            "logits": lambda: runner(padded, attention_mask=mask, position_ids=positions).logits,
            "generate one": lambda: _greedy(runner, single, None, cls is None),
            "generate batch": lambda: _greedy(runner, padded, mask, cls is None),
        }
        for name, check in checks.items():
            where = tr("in forward (stage {number}, the whole model, {layout}: {check})",
                       number=stage_number(STAGE["whole_model"]), layout=tr(MODEL_LAYOUTS[e]), check=tr(name))
            with torch.no_grad():
                records[(e, -1, name)] = attempt(guard, where, lambda: Outcome(_plain(check(), name), None, None))
            if isinstance(records[(e, -1, name)], Raised):
                break
    return records


def _greedy(model, ids, mask, is_twin: bool) -> torch.Tensor:
    if is_twin:
        return model.generate(ids, attention_mask=mask if mask is not None else torch.ones_like(ids),
                              max_new_tokens=GENERATED, min_new_tokens=GENERATED, do_sample=False,
                              eos_token_id=None, pad_token_id=0)
    return model.generate(ids, GENERATED, attention_mask=mask)


MODEL_LAYOUTS = (phrase("Llama layout (qk_norm off)"), phrase("Qwen3 layout (qk_norm on)"))


def model_episodes(seed: int = 0) -> list[Episode]:
    """Stage 10's checks as episodes, for comparing: logits of the padded batch (its real tokens
    only), greedy tokens of one prompt and of the padded batch."""
    _, _, mask = _prompts(BASE["vocab_size"], torch.Generator().manual_seed(seed))
    checks = [Call(phrase("logits"), real=mask.bool()), Call(phrase("generate one")), Call(phrase("generate batch"))]
    return [Episode(layout, checks) for layout in MODEL_LAYOUTS]

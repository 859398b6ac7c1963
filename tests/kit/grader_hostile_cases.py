"""Learner files that must not pass, or not even be graded, each with the words its verdict must
hold and the exit status of `python -m labkit.grader` (tests/kit/test_grader_hostile.py). Each is a
small change to a correct layer. `{limit}` in the words stands for the time limit the test runs
with, which it measures on the machine it runs on."""

HEADER = """import sys

import torch
import torch.nn.functional as F

import minimind_ref as mm
"""

CASES = {
    # right when asked for the weights; without them, torch's is_causal, aligned top-left
    "path_without_weights_wrong": ("""
class MyAttention(mm.Attention):
    def forward(self, x, position_embeddings, attn_mask=None, past_key_values=None, output_attentions=False):
        if output_attentions:
            return super().forward(x, position_embeddings, attn_mask, past_key_values, True)
        q, k, v = self.split_heads(x)
        if self.q_norm is not None:
            q, k = self.normalise(q, k)
        q, k = self.rotate(q, k, *position_embeddings)
        if past_key_values is not None:
            k, v = past_key_values.update(self.layer_idx, k, v)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=attn_mask is None,
                                             enable_gqa=True)
        return self.o_proj(self.merge_heads(out)), None
""", ["right when asked for its weights and wrong without them", "causal mask aligned top-left"], 1),
    "dropout_on_in_eval": ("""
class MyAttention(mm.Attention):
    def forward(self, x, position_embeddings, attn_mask=None, past_key_values=None, output_attentions=False):
        out, weights = super().forward(x, position_embeddings, attn_mask, past_key_values, output_attentions)
        return F.dropout(out, self.dropout), weights
""", ["dropout acts in eval mode"], 1),
    "none_weights": ("""
class MyAttention(mm.Attention):
    def forward(self, x, position_embeddings, attn_mask=None, past_key_values=None, output_attentions=False):
        out, _ = super().forward(x, position_embeddings, attn_mask, past_key_values, output_attentions)
        return out, None
""", ["returned None for the weights although output_attentions=True"], 1),
    "exit_at_import": ("""
class MyAttention(mm.Attention):
    pass


print("self-test passed")
sys.exit(0)
""", ["usage error: your code ends the program at import of", "SystemExit(0)", "sys.exit(0)"], 2),
    "exit_in_forward": ("""
class MyAttention(mm.Attention):
    def forward(self, x, position_embeddings, attn_mask=None, past_key_values=None, output_attentions=False):
        exit()
""", ["usage error: your code ends the program in forward (stage 1", "exit()"], 2),
    "hang_in_forward": ("""
class MyAttention(mm.Attention):
    def forward(self, x, position_embeddings, attn_mask=None, past_key_values=None, output_attentions=False):
        while True:
            pass
""", ["usage error: your code did not return within {limit} s in forward (stage 1"], 2),
    "forward_misspelt": ("""
class MyAttention(torch.nn.Module):
    def __init__(self, config, layer_idx=0):
        super().__init__()

    def foward(self, x, position_embeddings, attn_mask=None, past_key_values=None, output_attentions=False):
        return x, None
""", ["usage error: your class MyAttention has no forward method; did you mean foward -> forward?"], 2),
    "constructor_typo": ("""
class MyAttention(mm.Attention):
    def __init__(self, config, layer_idx=0):
        super().__init__(config, layer_idx)
        self.heads = config.num_attention_head
""", ["usage error: MyAttention(config, layer_idx) fails: AttributeError", "num_attention_head",
      "self.heads = config.num_attention_head"], 2),
    "default_dtype_at_import": ("""
torch.set_default_dtype(torch.float64)


class MyAttention(mm.Attention):
    pass
""", ["usage error: your code changes torch's global state at import of",
      "the default dtype (torch.float32 -> torch.float64)"], 2),
    "replaces_the_grader": ("""
import labkit.grader.compare


class MyAttention(mm.Attention):
    def scores(self, q, k):
        return q @ k.transpose(-2, -1)  # unscaled: wrong


labkit.grader.compare.first_difference = lambda *args: None
""", ["usage error: your code replaces the grader's own functions at import of",
      "labkit.grader.compare.first_difference"], 2),
    # a wrong layer, and grader code swapped so that the reference is graded instead
    "swaps_the_graders_code": ("""
import labkit.grader.ladder


def build_reference(cls, config, reference, layer_idx, dtype, guard=None):
    import minimind_ref
    layer = minimind_ref.Attention(config, layer_idx)
    layer.load_state_dict(reference.state_dict(), strict=True)
    return layer.to(dtype).eval()


labkit.grader.ladder.build_layer.__code__ = build_reference.__code__


class MyAttention(mm.Attention):
    def scores(self, q, k):
        return q @ k.transpose(-2, -1)  # unscaled: wrong
""", ["usage error: your code reaches into the interpreter at import of",
      "__code__ of labkit.grader.ladder.build_layer replaced"], 2),
    # a wrong layer that empties the grader's records through the frames of its callers
    "empties_the_records": ("""
class MyAttention(mm.Attention):
    def scores(self, q, k):
        frame = sys._getframe()
        while frame is not None:
            if isinstance(frame.f_locals.get("records"), dict):
                frame.f_locals["records"].clear()
            frame = frame.f_back
        return q @ k.transpose(-2, -1)  # unscaled: wrong
""", ["no result was recorded for this call"], 1),
    # the garbage collector hands out every object, the grader's records and snapshot included
    "reaches_the_garbage_collector": ("""
import gc


class MyAttention(mm.Attention):
    def forward(self, *args):
        gc.get_objects()
        return super().forward(*args)
""", ["usage error: your code reaches into the interpreter in forward (stage 1", "a call to gc.get_objects()"], 2),
    "starts_a_thread": ("""
import threading


class MyAttention(mm.Attention):
    def forward(self, *args):
        threading.Thread(target=print).start()
        return super().forward(*args)
""", ["usage error: your code reaches into the interpreter in forward (stage 1", "a new thread"], 2),
    # right, and the reference's own code: passes, and says whose code it is
    "inherits_everything": ("""
class MyAttention(mm.Attention):
    pass
""", ["✓ MyAttention: right.", "note: not all of this is your code: MyAttention inherits from minimind_ref.Attention;",
      "of the reference's functions ran in it (minimind_ref's Attention."], 0),
    # the output left in float32 for a float16 input: the values are right, the dtype is not, and
    # every known mistake of a later stage gives those same values on stage 6
    "inconclusive_match": ("""
class MyAttention(mm.Attention):
    def forward(self, x, position_embeddings, attn_mask=None, past_key_values=None, output_attentions=False):
        out, weights = super().forward(x, position_embeddings, attn_mask, past_key_values, output_attentions)
        return out.float(), weights
""", ["stage 6 of 11, a padded batch, fails", "diagnosis: inconclusive", "the output is torch.float32"], 1),
}


def write(folder, name: str):
    """The case's file in `folder`; its path."""
    path = folder / f"{name}.py"
    path.write_text(HEADER + CASES[name][0])
    return path

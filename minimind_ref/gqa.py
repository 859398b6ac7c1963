"""repeat_kv: let each key/value head serve a group of query heads (GQA and MQA, module 04).

With 8 query heads and 2 key/value heads, query heads 0-3 read KV head 0 and heads 4-7 read KV
head 1. The cache stores only the 2 KV heads (that is the saving); at attention time each KV
head is repeated `n_rep` times so that the shapes line up with the queries.

A common claim is that this repetition is free. It is half true: `expand` makes a view that
shares storage (stride 0 on the new axis, no bytes allocated), but the `reshape` that merges the
group axis into the head axis cannot be expressed as a view of that storage, so it copies:
n_rep times the KV bytes. (With a single KV head, MQA, it can: the merged axis keeps stride 0 and
nothing is copied.) Module 04 shows the pointers and bytes. torch's fused SDPA with `enable_gqa=True`
avoids the copy on its CPU flash kernel; its math fallback (used with dropout, say) still copies.
"""

import torch

from ._checks import check_repeat_kv


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """[B, H_kv, S, D] -> [B, H_kv * n_rep, S, D]; head j of the result is KV head j // n_rep.

    Heads-first layout, as attention uses it (MiniMind's own version takes [B, S, H_kv, D]; the
    rule is the same). With n_rep == 1 (MHA) the input itself is returned, no copy.
    """
    check_repeat_kv(x, n_rep)
    if n_rep == 1:
        return x
    batch, kv_heads, seq, head_dim = x.shape
    grouped = x[:, :, None, :, :].expand(batch, kv_heads, n_rep, seq, head_dim)  # a view: no copy
    return grouped.reshape(batch, kv_heads * n_rep, seq, head_dim)  # copies, unless kv_heads == 1

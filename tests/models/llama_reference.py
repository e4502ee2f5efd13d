#!/usr/bin/env python3
"""An independent count of a Llama-family model's activations.

A small Llama / Mistral / Qwen2 decoder in plain PyTorch, op for op as
Hugging Face's modeling_llama.py computes it in training (RMSNorm upcast to
float32, rotary embedding with rotate_half and cos/sin computed once per
forward, grouped-query attention through scaled_dot_product_attention with
enable_gqa and is_causal, SwiGLU MLP, tied or untied head, the causal-LM loss
over shifted labels with the logits upcast to float32). It runs one forward
pass and counts the bytes of every tensor autograd saves for backward
(torch.autograd.graph.saved_tensors_hooks), each storage once.

Usage (the wheel's Python: python3 with PYTHONPATH naming the torch wheel's
site-packages):

  llama_reference.py CONFIG [--seq-len N] [--micro-batch B]
                     [--dtype float32|bf16-autocast|bfloat16] [--tensors]
                     [--max-weights-gib G]

CONFIG is a memprof INI file (its [llama] keys; seq_len under [llama] and
micro_batch under [train] unless given as flags) or a Hugging Face
config.json (LlamaForCausalLM, MistralForCausalLM or Qwen2ForCausalLM;
--seq-len and --micro-batch are then required). Biases as memprof's keys
say: attention_bias on q, k, v and o (Llama's); qkv_bias on q, k and v only
(Qwen2ForCausalLM always, whatever attention_bias says); mlp_bias on gate,
up and down; Mistral has none. --dtype: float32 (default);
bf16-autocast (float32 weights, the forward under CPU autocast to bfloat16);
bfloat16 (weights and activations in bfloat16).

Prints one JSON object:
  activations_bytes        every saved storage that is not a parameter, a
                           parameter's autocast copy or the input batch;
                           the sum of the next two
  block_bytes              [per decoder block]: the storages first saved
                           while block i runs (its input included)
  outside_blocks_bytes     the rest: rotary cos/sin, the final norm, the
                           head and the loss
  weight_casts_bytes       bfloat16 copies of parameters that autocast made
                           and autograd saved
  saved_parameter_bytes    parameters autograd saved (weights, not
                           activations)
  saved_input_bytes        the token ids, saved by the embedding
  parameters               the model's parameter count
  config                   the keys used
and with --tensors, "tensors": each saved storage with its block, shape,
dtype, bytes and the op that saved it first.

Exit 2 for a config it cannot read, or whose weights are over
--max-weights-gib (default 8), so that a 7B config does not exhaust the
machine's memory.
"""

import argparse
import configparser
import json
import sys
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

KEYS = ("num_hidden_layers", "hidden_size", "intermediate_size",
        "num_attention_heads", "num_key_value_heads", "vocab_size")
ARCHS = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral",
         "Qwen2ForCausalLM": "qwen2"}


def fail(message):
    print("llama_reference.py: " + message, file=sys.stderr)
    sys.exit(2)


def read_config(path, args):
    """The model keys, seq_len and micro-batch of `path`."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        fail(f"cannot read {path}: {e}")
    c = {}
    if path.endswith(".json"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            fail(f"{path}: not valid JSON: {e}")
        arch = ARCHS.get((doc.get("architectures") or [""])[0])
        if arch is None:
            fail(f"{path}: architectures: expected one of {', '.join(ARCHS)}")
        for key in KEYS:
            if key == "num_key_value_heads" and arch == "llama":
                c[key] = doc.get(key) or doc.get("num_attention_heads")
            elif key not in doc:
                fail(f"{path}: missing '{key}'")
            else:
                c[key] = doc[key]
        c["head_dim"] = doc.get("head_dim")
        c["tie_word_embeddings"] = bool(doc.get("tie_word_embeddings", False))
        c["attention_bias"] = (arch == "llama"
                               and bool(doc.get("attention_bias", False)))
        c["qkv_bias"] = arch == "qwen2"
        c["mlp_bias"] = arch == "llama" and bool(doc.get("mlp_bias", False))
        c["rms_norm_eps"] = float(doc.get("rms_norm_eps", 1e-6))
        c["rope_theta"] = float(doc.get("rope_theta", 10000.0))
        seq_len, micro_batch = None, None
    else:
        ini = configparser.ConfigParser(inline_comment_prefixes=("#",))
        try:
            ini.read_string("[top]\n" + text)
        except configparser.Error as e:
            fail(f"{path}: {e}")
        if "llama" not in ini:
            fail(f"{path}: no [llama] section")
        s = ini["llama"]
        try:
            for key in KEYS:
                c[key] = s.getint(key)
            c["head_dim"] = s.getint("head_dim", fallback=None)
            for key in ("tie_word_embeddings", "attention_bias", "qkv_bias",
                        "mlp_bias"):
                c[key] = s.getboolean(key, fallback=False)
            c["rms_norm_eps"] = s.getfloat("rms_norm_eps", fallback=1e-6)
            c["rope_theta"] = s.getfloat("rope_theta", fallback=10000.0)
            seq_len = s.getint("seq_len", fallback=None)
            micro_batch = (ini["train"].getint("micro_batch", fallback=None)
                           if "train" in ini else None)
        except ValueError as e:
            fail(f"{path}: {e}")
        for key in KEYS:
            if c[key] is None:
                fail(f"{path}: [llama] {key} is not set")
    if c["head_dim"] is None:
        c["head_dim"] = c["hidden_size"] // c["num_attention_heads"]
    seq_len = args.seq_len or seq_len
    micro_batch = args.micro_batch or micro_batch
    if not seq_len or not micro_batch:
        fail(f"{path}: give --seq-len and --micro-batch")
    if c["num_attention_heads"] % c["num_key_value_heads"]:
        fail(f"{path}: num_key_value_heads does not divide "
             "num_attention_heads")
    return c, seq_len, micro_batch


class RMSNorm(nn.Module):
    def __init__(self, size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, hd = c["hidden_size"], c["head_dim"]
        h, kv = c["num_attention_heads"], c["num_key_value_heads"]
        o_bias = c["attention_bias"]
        bias = o_bias or c["qkv_bias"]
        self.head_dim = hd
        self.q_proj = nn.Linear(d, h * hd, bias=bias)
        self.k_proj = nn.Linear(d, kv * hd, bias=bias)
        self.v_proj = nn.Linear(d, kv * hd, bias=bias)
        self.o_proj = nn.Linear(h * hd, d, bias=o_bias)

    def forward(self, x, cos, sin):
        shape = (*x.shape[:-1], -1, self.head_dim)
        q = self.q_proj(x).view(shape).transpose(1, 2)
        k = self.k_proj(x).view(shape).transpose(1, 2)
        v = self.v_proj(x).view(shape).transpose(1, 2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = (q * cos) + (rotate_half(q) * sin)
        k = (k * cos) + (rotate_half(k) * sin)
        # No mask in training without padding: is_causal, and GQA in the
        # kernel (enable_gqa) rather than repeat_kv, as HF's sdpa path does.
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=None, dropout_p=0.0,
            scale=self.head_dim ** -0.5, is_causal=q.shape[2] > 1,
            enable_gqa=True)
        out = out.transpose(1, 2).contiguous()
        return self.o_proj(out.reshape(*x.shape[:-1], -1).contiguous())


class Mlp(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, i, bias = c["hidden_size"], c["intermediate_size"], c["mlp_bias"]
        self.gate_proj = nn.Linear(d, i, bias=bias)
        self.up_proj = nn.Linear(d, i, bias=bias)
        self.down_proj = nn.Linear(i, d, bias=bias)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c["hidden_size"],
                                                c["rms_norm_eps"])
        self.mlp = Mlp(c)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class CausalLm(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, v = c["hidden_size"], c["vocab_size"]
        self.embed_tokens = nn.Embedding(v, d)
        self.layers = nn.ModuleList(
            Block(c) for _ in range(c["num_hidden_layers"]))
        self.norm = RMSNorm(d, c["rms_norm_eps"])
        self.lm_head = nn.Linear(d, v, bias=False)
        if c["tie_word_embeddings"]:
            self.lm_head.weight = self.embed_tokens.weight
        hd = c["head_dim"]
        inv_freq = 1.0 / (c["rope_theta"] ** (
            torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.vocab_size = v
        self.block_index = None  # the block running, for the counter

    def rotary(self, x, position_ids):
        inv = self.inv_freq[None, :, None].float().expand(
            position_ids.shape[0], -1, 1)
        pos = position_ids[:, None, :].float()
        with torch.autocast(device_type="cpu", enabled=False):
            freqs = (inv.float() @ pos.float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos(), emb.sin()
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)

    def forward(self, input_ids, labels):
        x = self.embed_tokens(input_ids)
        position_ids = torch.arange(input_ids.shape[1]).unsqueeze(0)
        cos, sin = self.rotary(x, position_ids)
        for i, layer in enumerate(self.layers):
            self.block_index = i
            x = layer(x, cos, sin)
        self.block_index = None
        logits = self.lm_head(self.norm(x))
        # Hugging Face's ForCausalLMLoss.
        logits = logits.float()
        labels = F.pad(labels, (0, 1), value=-100)
        shift_labels = labels[..., 1:].contiguous()
        return F.cross_entropy(logits.view(-1, self.vocab_size),
                               shift_labels.view(-1), ignore_index=-100,
                               reduction="mean")


VIEW_OPS = {"TBackward0", "ViewBackward0", "TransposeBackward0",
            "PermuteBackward0", "ExpandBackward0", "UnsqueezeBackward0",
            "SliceBackward0", "AsStridedBackward0", "UnsafeViewBackward0"}


def is_weight_cast(t, parameters):
    """A parameter's autocast copy (or a view of one): ToCopyBackward of an
    AccumulateGrad, through views only."""
    fn = t.grad_fn
    while fn is not None and type(fn).__name__ in VIEW_OPS:
        fn = fn.next_functions[0][0]
    if fn is None or type(fn).__name__ != "ToCopyBackward0":
        return False
    source = fn.next_functions[0][0]
    return getattr(source, "variable", None) is not None and any(
        source.variable is p for p in parameters)


def main():
    parser = argparse.ArgumentParser(
        description="Count the bytes autograd saves for a Llama-family "
        "model (see the top of this file).")
    parser.add_argument("config")
    parser.add_argument("--seq-len", type=int)
    parser.add_argument("--micro-batch", type=int)
    parser.add_argument("--dtype", default="float32",
                        choices=("float32", "bf16-autocast", "bfloat16"))
    parser.add_argument("--tensors", action="store_true")
    parser.add_argument("--max-weights-gib", type=float, default=8.0)
    args = parser.parse_args()
    c, seq_len, micro_batch = read_config(args.config, args)

    with torch.device("meta"):
        count = sum(p.numel() for p in CausalLm(c).parameters())
    weight_bytes = count * (2 if args.dtype == "bfloat16" else 4)
    if weight_bytes > args.max_weights_gib * 2**30:
        fail(f"{args.config}: {count:,} parameters take "
             f"{weight_bytes / 2**30:.1f} GiB, over --max-weights-gib "
             f"{args.max_weights_gib:g}")
    torch.manual_seed(0)
    model = CausalLm(c)
    if args.dtype == "bfloat16":
        model = model.to(torch.bfloat16)
    model.train()
    parameters = list(model.parameters())
    parameter_storages = {p.untyped_storage().data_ptr() for p in parameters}
    input_ids = torch.randint(0, c["vocab_size"], (micro_batch, seq_len))
    labels = input_ids
    input_storages = {input_ids.untyped_storage().data_ptr()}

    seen = {}  # storage pointer -> record
    kept = []  # the saved tensors, alive until the count is done

    def pack(t):
        kept.append(t)
        ptr = t.untyped_storage().data_ptr()
        if ptr not in seen:
            if ptr in parameter_storages:
                kind = "parameter"
            elif ptr in input_storages:
                kind = "input"
            elif is_weight_cast(t, parameters):
                kind = "weight_cast"
            else:
                kind = "activation"
            seen[ptr] = {
                "kind": kind,
                "block": model.block_index,
                "shape": list(t.shape),
                "dtype": str(t.dtype).replace("torch.", ""),
                "bytes": t.untyped_storage().nbytes(),
                "made_by": type(t.grad_fn).__name__ if t.grad_fn else "leaf",
            }
        return t

    # cos and sin are computed once, before the blocks, and shared by them.
    rotary = model.rotary

    def rotary_outside(x, position_ids):
        cos, sin = rotary(x, position_ids)
        for t in (cos, sin):
            seen.setdefault(t.untyped_storage().data_ptr(), {
                "kind": "activation", "block": None, "shape": list(t.shape),
                "dtype": str(t.dtype).replace("torch.", ""),
                "bytes": t.untyped_storage().nbytes(), "made_by": "rotary",
                "unsaved": True})
        return cos, sin

    model.rotary = rotary_outside
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16,
                            enabled=args.dtype == "bf16-autocast"):
            loss = model(input_ids, labels)
    # cos/sin count only when a block saved them.
    saved_ptrs = {t.untyped_storage().data_ptr() for t in kept}
    records = [r for ptr, r in seen.items() if ptr in saved_ptrs]

    layers = c["num_hidden_layers"]
    block_bytes = [0] * layers
    totals = {"activation": 0, "weight_cast": 0, "parameter": 0, "input": 0}
    outside = 0
    for r in records:
        r.pop("unsaved", None)
        totals[r["kind"]] += r["bytes"]
        if r["kind"] == "activation":
            if r["block"] is None:
                outside += r["bytes"]
            else:
                block_bytes[r["block"]] += r["bytes"]
    result = {
        "activations_bytes": totals["activation"],
        "block_bytes": block_bytes,
        "outside_blocks_bytes": outside,
        "weight_casts_bytes": totals["weight_cast"],
        "saved_parameter_bytes": totals["parameter"],
        "saved_input_bytes": totals["input"],
        "parameters": sum(p.numel() for p in parameters),
        "config": dict(c, seq_len=seq_len, micro_batch=micro_batch,
                       dtype=args.dtype),
    }
    if args.tensors:
        result["tensors"] = records
    assert torch.isfinite(loss.detach().float())
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

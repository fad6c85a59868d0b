#!/usr/bin/env python3
"""Read a GGUF written by convert_minilm.py back with the gguf package and check it.

    check_embedding_gguf.py MODEL.gguf SRC_DIR [--rank-seed SEED]

Checks, against the source directory it was converted from: the metadata keys
(names, types, values and order), the tensor list (names, shapes, dtypes:
F32 for 1-D tensors, position_embd and token_types, F16 for the other
matrices), every tensor's data (bit-equal to the safetensors values, or to
their float16 rounding for F16 tensors), the phantom-space vocabulary rules,
and with --rank-seed the rank pooling type and the seeded head. Prints "ok"
or the first failure. Run it with target/venv-convert/bin/python.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

import gguf

T = gguf.GGUFValueType
HF_TO_GGUF = {
    "embeddings.word_embeddings": "token_embd",
    "embeddings.position_embeddings": "position_embd",
    "embeddings.token_type_embeddings": "token_types",
    "embeddings.LayerNorm": "token_embd_norm",
    "attention.self.query": "attn_q",
    "attention.self.key": "attn_k",
    "attention.self.value": "attn_v",
    "attention.output.dense": "attn_output",
    "attention.output.LayerNorm": "attn_output_norm",
    "intermediate.dense": "ffn_up",
    "output.dense": "ffn_down",
    "output.LayerNorm": "layer_output_norm",
}


def gguf_name(hf: str) -> str | None:
    if hf in ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias"):
        return None
    stem, suffix = hf.rsplit(".", 1)
    if stem.startswith("encoder.layer."):
        _, _, bid, rest = stem.split(".", 3)
        return f"blk.{bid}.{HF_TO_GGUF[rest]}.{suffix}"
    return f"{HF_TO_GGUF[stem]}.{suffix}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("gguf", type=Path)
    ap.add_argument("src", type=Path)
    ap.add_argument("--rank-seed", type=int)
    args = ap.parse_args()

    cfg = json.loads((args.src / "config.json").read_text())
    r = gguf.GGUFReader(args.gguf)
    kv = {k: f for k, f in r.fields.items() if not k.startswith("GGUF.")}

    def val(key):
        return kv[key].contents()

    expected = [
        ("general.architecture", T.STRING, "bert"),
        ("general.type", T.STRING, "model"),
        ("general.name", T.STRING, "MiniLM L6 H384 Uncased"),
        ("general.version", T.STRING, "v2"),
        ("general.organization", T.STRING, "Nreimers"),
        ("general.basename", T.STRING, "sentence-transformers__all-MiniLM-L6"),
    ]
    if args.rank_seed is not None:
        expected.append(("general.description", T.STRING, None))
    expected += [
        ("general.size_label", T.STRING, "23M"),
        ("bert.block_count", T.UINT32, cfg["num_hidden_layers"]),
        ("bert.context_length", T.UINT32, cfg["max_position_embeddings"]),
        ("bert.embedding_length", T.UINT32, cfg["hidden_size"]),
        ("bert.feed_forward_length", T.UINT32, cfg["intermediate_size"]),
        ("bert.attention.head_count", T.UINT32, cfg["num_attention_heads"]),
        ("bert.attention.layer_norm_epsilon", T.FLOAT32, float(np.float32(cfg["layer_norm_eps"]))),
        ("general.file_type", T.UINT32, None),
        ("bert.attention.causal", T.BOOL, False),
        ("bert.pooling_type", T.UINT32, 4 if args.rank_seed is not None else 1),
        ("general.quantization_version", T.UINT32, 2),
        ("tokenizer.ggml.token_type_count", T.UINT32, cfg["type_vocab_size"]),
        ("tokenizer.ggml.model", T.STRING, "bert"),
        ("tokenizer.ggml.pre", T.STRING, "jina-v2-en"),
        ("tokenizer.ggml.tokens", T.ARRAY, None),
        ("tokenizer.ggml.token_type", T.ARRAY, None),
        ("tokenizer.ggml.bos_token_id", T.UINT32, 101),
        ("tokenizer.ggml.eos_token_id", T.UINT32, 102),
        ("tokenizer.ggml.unknown_token_id", T.UINT32, 100),
        ("tokenizer.ggml.seperator_token_id", T.UINT32, 102),
        ("tokenizer.ggml.padding_token_id", T.UINT32, 0),
        ("tokenizer.ggml.mask_token_id", T.UINT32, 103),
        ("tokenizer.ggml.add_bos_token", T.BOOL, True),
        ("tokenizer.ggml.add_eos_token", T.BOOL, True),
        ("tokenizer.ggml.add_sep_token", T.BOOL, False),
        ("tokenizer.ggml.normalizer.lowercase", T.BOOL, True),
    ]
    assert list(kv) == [k for k, _, _ in expected], f"keys/order: {list(kv)}"
    for key, vtype, value in expected:
        assert kv[key].types[0] == vtype, f"{key}: type {kv[key].types}"
        if value is not None:
            assert val(key) == value, f"{key}: {val(key)!r} != {value!r}"
    ftype = val("general.file_type")
    assert ftype in (0, 1), ftype

    # vocabulary: phantom space for WordPiece, control tokens as they are
    vocab = [line.rstrip("\n") for line in open(args.src / "vocab.txt", encoding="utf-8")]
    tokens = [kv["tokenizer.ggml.tokens"].contents(i) for i in range(len(kv["tokenizer.ggml.tokens"].data))]
    types = [kv["tokenizer.ggml.token_type"].contents(i) for i in range(len(kv["tokenizer.ggml.token_type"].data))]
    control = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
    assert len(tokens) == len(types) == len(vocab) == cfg["vocab_size"]
    for i, (w, t, ty) in enumerate(zip(vocab, tokens, types)):
        want = w if w in control else (w[2:] if w.startswith("##") else "\u2581" + w)
        assert (t, ty) == (want, 3 if w in control else 1), f"token {i}: {w!r} -> {t!r} type {ty}"
    assert len(set(tokens)) == len(tokens)

    # tensors: names, order, shapes, dtypes and data
    src = load_file(str(args.src / "model.safetensors"))
    want = []
    for hf in sorted(src):
        name = gguf_name(hf)
        if name is not None:
            want.append((name, src[hf]))
    if args.rank_seed is not None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from convert_minilm import rank_head
        want += rank_head(args.rank_seed, cfg["hidden_size"])
    got = r.tensors
    assert [t.name for t in got] == [n for n, _ in want], [t.name for t in got]
    for t, (name, data) in zip(got, want):
        f32 = data.ndim == 1 or name in ("position_embd.weight", "token_types.weight") or ftype == 0
        qtype = gguf.GGMLQuantizationType.F32 if f32 else gguf.GGMLQuantizationType.F16
        assert t.tensor_type == qtype, f"{name}: {t.tensor_type.name}"
        assert list(t.shape) == list(reversed(data.shape)), f"{name}: shape {list(t.shape)}"
        expect = data.astype(np.float32 if f32 else np.float16)
        assert np.array_equal(np.asarray(t.data).reshape(data.shape).view(expect.dtype), expect), f"{name}: data"
    print(f"ok: {args.gguf}: {len(kv)} keys, {len(got)} tensors, {len(tokens)} tokens")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Make a TEST-ONLY LoRA adapter GGUF for SmolLM2-135M-Instruct that makes
the word " banana" far more likely, more so the larger its scale.

    make-test-lora.py TEXT_MODEL_GGUF OUT_GGUF

No adapter can be fetched where the tests run, so this one is set by hand
from the model's own weights. A LoRA adds s * B(A x) to a weight's product
(adapter.lora.alpha is 0, so the scale s is the user's alone). A plain
rank-1 adapter reads its input linearly, so it would push the word up for
some inputs and down for others; this one uses SwiGLU to get a push that is
never negative:

  blk.29 ffn_gate, ffn_up   K pairs of hidden neurons (i, j), the ones the
                            down projection reads least, get +z and -z added
                            to both their gate and up pre-activations, where
                            z = s * A_SCALE * x[c] reads one coordinate c of
                            the layer's normalised input; for |z| large,
                            silu(z) z + silu(-z)(-z) = z^2, whatever x's sign;
  blk.29 ffn_down           reads the sum of those 2K neurons and writes
                            s * BETA times v/|v| into the residual stream,
                            v = output_norm.weight * E[" banana"]: the
                            direction the output head turns into that token;
  blk.0 attn_v              a small rank-1 change of the values of the first
                            layer, so that the keys and values cached for a
                            prompt depend on the adapter (a prompt cache that
                            served a prefix computed without it would give
                            other log-probabilities).

The down projection reads the whole activation of those neurons, the base
model's part included, so the push is s * BETA * (base part + ~z^2): A_SCALE
is large and BETA small so that the z^2 part wins from small scales on (with
A_SCALE 6 and BETA 40, the same strength at s = 1, the base part won below
s = 0.7 and pushed the word down). The word's logit over the base model's
own first choice then grows with s from s = 0.25 on (below about 0.15 the
base part still wins, and it falls a little); at s = 1 the word is all but
certain. A_SCALE is no larger because the activations grow like (s *
A_SCALE)^2 and the quantised down projection sums them in 16-bit floats:
with A_SCALE 60 scale 2 already overflowed to NaN logits (the extension
then refuses to go on; scale 100 still does it with this adapter). At s = 0
llama.cpp drops the adapter and the model is the base model bit for bit. Everything is F32, computed with numpy
from the model's dequantised weights and written in a fixed order: the same
model gives the same bytes on every run.
"""
import sys

import numpy as np
import gguf
from gguf import quants

WORD = ("\u0120banana", 21285)
LAYER = 29
K = 8
A_SCALE = 30.0
BETA = 1.6
ATTN_V_EPS = 0.05
MARGIN = 1.0


def field_value(reader, key):
    field = reader.fields.get(key)
    if field is None:
        sys.exit(f"error: {key} not found in the text model")
    return field.contents()


def tensor(reader, name):
    t = next((t for t in reader.tensors if t.name == name), None)
    if t is None:
        sys.exit(f"error: {name} not found in the text model")
    data = np.asarray(t.data)
    if t.tensor_type not in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
        data = quants.dequantize(data, t.tensor_type)
    # numpy order: (rows = n_out, cols = n_in), ggml's ne reversed.
    shape = tuple(int(n) for n in reversed(t.shape))
    return np.asarray(data, dtype=np.float32).reshape(shape)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: make-test-lora.py TEXT_MODEL_GGUF OUT_GGUF")
    source, out = sys.argv[1], sys.argv[2]
    reader = gguf.GGUFReader(source)
    arch = field_value(reader, "general.architecture")
    if arch != "llama":
        sys.exit(f"error: the text model is {arch}, not llama (SmolLM2)")
    tokens = reader.fields["tokenizer.ggml.tokens"]
    text, word = WORD
    found = bytes(tokens.parts[tokens.data[word]]).decode("utf-8")
    if found != text:
        sys.exit(f"error: token {word} is {found!r}, not {text!r}: not SmolLM2's vocabulary")

    embd = tensor(reader, "token_embd.weight")           # (n_vocab, n_embd)
    out_norm = tensor(reader, "output_norm.weight")      # (n_embd,)
    ffn_norm = tensor(reader, f"blk.{LAYER}.ffn_norm.weight")
    down = tensor(reader, f"blk.{LAYER}.ffn_down.weight")  # (n_embd, n_ff)
    attn_v = tensor(reader, "blk.0.attn_v.weight")         # (n_kv, n_embd)
    n_vocab, n_embd = embd.shape
    n_ff = down.shape[1]

    # The direction of the residual stream the output head reads as the word
    # (tied embeddings: logits = E (g * norm(h))): u, the direction after the
    # norm's weight g, is moved from E[word] away from whichever other token
    # scores highest until the word leads by MARGIN (a fixed number of
    # deterministic steps); the residual direction is u / g.
    u = embd[word] / np.linalg.norm(embd[word])
    for _ in range(400):
        scores = embd @ u
        lead = scores[word]
        scores[word] = -np.inf
        rival = int(np.argmax(scores))
        if lead - scores[rival] >= MARGIN:
            break
        step = embd[word] - embd[rival]
        u = u + 0.02 * step / np.linalg.norm(step)
        u = u / np.linalg.norm(u)
    scores = embd @ u
    if int(np.argmax(scores)) != word:
        sys.exit("error: no direction found that favours the word")
    margin = float(scores[word] - np.sort(scores)[-2])
    print(f"push margin over the runner-up: {margin:.3f}", file=sys.stderr)
    v = u / out_norm
    v_hat = (v / np.linalg.norm(v)).astype(np.float32)

    # The hidden neurons the down projection reads least, in pairs; the
    # input coordinates the layer's norm weighs most.
    quiet = np.argsort(np.linalg.norm(down, axis=0), kind="stable")[: 2 * K]
    pairs = [(int(quiet[2 * m]), int(quiet[2 * m + 1])) for m in range(K)]
    coords = np.argsort(-np.abs(ffn_norm), kind="stable")[:K]

    gate_a = np.zeros((K, n_embd), dtype=np.float32)
    gate_b = np.zeros((n_ff, K), dtype=np.float32)
    for m, ((i, j), c) in enumerate(zip(pairs, coords)):
        gate_a[m, int(c)] = A_SCALE
        gate_b[i, m] = 1.0
        gate_b[j, m] = -1.0
    down_a = np.zeros((1, n_ff), dtype=np.float32)
    for i, j in pairs:
        down_a[0, i] = 1.0
        down_a[0, j] = 1.0
    down_b = (BETA * v_hat).astype(np.float32).reshape(n_embd, 1)

    v_a = np.zeros((1, n_embd), dtype=np.float32)
    v_a[0, int(coords[0])] = ATTN_V_EPS
    v_b = np.zeros((attn_v.shape[0], 1), dtype=np.float32)
    v_b[:, 0] = 1.0

    writer = gguf.GGUFWriter(out, arch)
    writer.add_string("general.type", "adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", 0.0)
    writer.add_name("SmolLM2-135M test LoRA: banana")
    for name, data in [
        ("blk.0.attn_v.weight.lora_a", v_a),
        ("blk.0.attn_v.weight.lora_b", v_b),
        (f"blk.{LAYER}.ffn_gate.weight.lora_a", gate_a),
        (f"blk.{LAYER}.ffn_gate.weight.lora_b", gate_b),
        (f"blk.{LAYER}.ffn_up.weight.lora_a", gate_a.copy()),
        (f"blk.{LAYER}.ffn_up.weight.lora_b", gate_b.copy()),
        (f"blk.{LAYER}.ffn_down.weight.lora_a", down_a),
        (f"blk.{LAYER}.ffn_down.weight.lora_b", down_b),
    ]:
        writer.add_tensor(name, np.ascontiguousarray(data, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Make a TEST-ONLY image projector (mmproj) GGUF for a text model: a
LLaVA-type ("mlp") CLIP vision projector, set by hand, that sees colour.

    make-colour-mmproj.py TEXT_MODEL_GGUF OUT_GGUF

No real vision model can be fetched where the tests run, so this one is
built from nothing but the text model's own token embeddings. Images are
28x28 (llama.cpp's mtmd resizes whatever it is given), cut into 14x14
patches: 2x2 = 4 image tokens. Each token is what the model reads for the
word " red", " green" or " blue" when its patch is pure red, green or blue:

  patch embedding   the mean of each colour channel over the patch
                    (image_mean 0, image_std 1: a pixel value of 255 is 1.0),
                    so the vision width is 3: one value per channel;
  position embd     zeros; no class embedding, no pre/post layer norm;
  encoder           one layer, which the graph never runs: the "mlp"
                    projector reads the output of layer n_layer - 1 = 0,
                    that is the patch embeddings themselves (the loader still
                    needs the layer's attn_out, ffn_up and ffn_down tensors);
  mm.0              SCALE times the identity, then GELU (GELU(x) is x for
                    x >= SCALE, near 0 for x <= 0);
  mm.2              column c is the token embedding of colour word c divided
                    by SCALE, so a pure colour comes out as that embedding.

Everything is F32 and written in a fixed order: the same text model gives
the same bytes on every run.
"""
import sys

import numpy as np
import gguf
from gguf import quants

SCALE = 8.0
IMAGE_SIZE = 28
PATCH_SIZE = 14
# The colour words, in channel order, with the token ids SmolLM2's tokenizer
# gives them (checked against the GGUF's vocabulary below).
COLOUR_TOKENS = [("\u0120red", 2382), ("\u0120green", 2654), ("\u0120blue", 4461)]


def field_value(reader, key):
    field = reader.fields.get(key)
    if field is None:
        sys.exit(f"error: {key} not found in the text model")
    return field.contents()


def colour_embeddings(path):
    reader = gguf.GGUFReader(path)
    arch = field_value(reader, "general.architecture")
    n_embd = int(field_value(reader, f"{arch}.embedding_length"))
    tokens = reader.fields["tokenizer.ggml.tokens"]
    ids = []
    for text, expected in COLOUR_TOKENS:
        found = bytes(tokens.parts[tokens.data[expected]]).decode("utf-8")
        if found != text:
            sys.exit(f"error: token {expected} is {found!r}, not {text!r}: not SmolLM2's vocabulary")
        ids.append(expected)
    embd = next((t for t in reader.tensors if t.name == "token_embd.weight"), None)
    if embd is None:
        sys.exit("error: token_embd.weight not found in the text model")
    # One row per token (quantized rows are blocks of bytes): dequantize
    # only the three rows needed.
    rows = np.asarray(embd.data)[ids]
    if embd.tensor_type not in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
        rows = quants.dequantize(rows, embd.tensor_type)
    rows = np.asarray(rows, dtype=np.float32).reshape(len(ids), n_embd)
    return n_embd, rows


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: make-colour-mmproj.py TEXT_MODEL_GGUF OUT_GGUF")
    text_model, out = sys.argv[1], sys.argv[2]
    n_embd_text, words = colour_embeddings(text_model)

    width = 3      # vision embedding: one value per colour channel
    hidden = 3     # the projector's hidden layer: one unit per colour
    n_ff = 4       # the unused layer's feed-forward width
    n_patches = (IMAGE_SIZE // PATCH_SIZE) ** 2

    # Conv kernel, ggml [14, 14, 3, width] (numpy reversed): output channel c
    # averages input channel c over the patch.
    patch = np.zeros((width, 3, PATCH_SIZE, PATCH_SIZE), dtype=np.float32)
    for c in range(3):
        patch[c, c] = 1.0 / (PATCH_SIZE * PATCH_SIZE)
    position = np.zeros((n_patches, width), dtype=np.float32)
    mm0_w = (SCALE * np.eye(hidden, width)).astype(np.float32)   # [out, in]
    mm0_b = np.zeros(hidden, dtype=np.float32)
    mm2_w = np.ascontiguousarray((words / SCALE).T, dtype=np.float32)  # [n_embd_text, hidden]
    mm2_b = np.zeros(n_embd_text, dtype=np.float32)

    w = gguf.GGUFWriter(out, "clip")
    w.add_string("general.name", "colour-test-mmproj")
    w.add_string("general.description",
                 "TEST ONLY: hand-set LLaVA-type projector that maps pure red/green/blue "
                 "14x14 patches to the text model's embeddings of ' red', ' green', ' blue'")
    w.add_uint32("general.file_type", 0)  # all F32
    w.add_bool("clip.has_vision_encoder", True)
    w.add_bool("clip.has_audio_encoder", False)
    w.add_string("clip.projector_type", "mlp")
    w.add_bool("clip.use_gelu", True)
    w.add_uint32("clip.vision.image_size", IMAGE_SIZE)
    w.add_uint32("clip.vision.patch_size", PATCH_SIZE)
    w.add_uint32("clip.vision.embedding_length", width)
    w.add_uint32("clip.vision.feed_forward_length", n_ff)
    w.add_uint32("clip.vision.projection_dim", n_embd_text)
    w.add_uint32("clip.vision.block_count", 1)
    w.add_uint32("clip.vision.attention.head_count", 1)
    w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
    w.add_array("clip.vision.image_mean", [0.0, 0.0, 0.0])
    w.add_array("clip.vision.image_std", [1.0, 1.0, 1.0])

    w.add_tensor("v.patch_embd.weight", patch)
    w.add_tensor("v.position_embd.weight", position)
    # Layer 0: loaded, never run.
    w.add_tensor("v.blk.0.attn_out.weight", np.zeros((width, width), dtype=np.float32))
    w.add_tensor("v.blk.0.ffn_up.weight", np.zeros((n_ff, width), dtype=np.float32))
    w.add_tensor("v.blk.0.ffn_down.weight", np.zeros((width, n_ff), dtype=np.float32))
    w.add_tensor("mm.0.weight", mm0_w)
    w.add_tensor("mm.0.bias", mm0_b)
    w.add_tensor("mm.2.weight", mm2_w)
    w.add_tensor("mm.2.bias", mm2_b)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()

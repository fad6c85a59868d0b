#!/usr/bin/env python3
"""Reference sentence embeddings (and test rerank scores) for all-MiniLM-L6-v2, in float64 numpy.

    embedding_reference.py [--model-dir DIR] [--round-f16] [--gelu erf|tanh] [--normalize] [INPUT.json]
    embedding_reference.py --rank [--model-dir DIR] [--round-f16] [--gelu erf|tanh] [INPUT.json]

An independent forward pass of the BERT that scripts/convert_minilm.py turns
into a GGUF, for tests to check the extension's vectors against. It reads the
Hugging Face files themselves (model.safetensors, config.json, tokenizer.json
or vocab.txt), never the GGUF and never llama.cpp, and computes everything in
float64. Run it with the converter's virtualenv, target/venv-convert/bin/python
(numpy, safetensors and tokenizers, pinned by scripts/fetch-embedding-model.sh).
DIR defaults to $INFER_EMBEDDING_SOURCE, else models/all-MiniLM-L6-v2 (the
source directory the fetch script keeps).

Embedding mode. Input (stdin, or the file INPUT.json):
    {"texts": ["first text", "second text", ...]}
Output (stdout):
    {"vectors": [[384 floats], ...], "tokens": [[token ids], ...]}
One vector per text: the mean of the final hidden states over ALL tokens of
the sequence, [CLS] and [SEP] included, which is what llama.cpp's MEAN pooling
averages (src/llama-graph.cpp, build_pooling / llm_graph_input_mean). It is
not L2-normalised unless --normalize is given (sentence-transformers
normalises all-MiniLM-L6-v2's output; llama.cpp's pooled embedding is not).

The model, per text:
    ids      = tokenizer(text) with [CLS] ... [SEP], no truncation, no padding
    x        = word_emb[ids] + pos_emb[0..n-1] + type_emb[0]; x = LayerNorm(x)
    6 times: a = MultiHeadSelfAttention(x)   (12 heads of 32, no mask, softmax(QK^T/sqrt(32))V)
             x = LayerNorm(x + a W_o^T + b_o)
             f = GELU(x W_up^T + b_up) W_down^T + b_down   (exact erf GELU)
             x = LayerNorm(x + f)
LayerNorm uses config.json's layer_norm_eps (1e-12). Token type 0 for every
token, as llama.cpp's BERT graph adds only row 0 of token_types
(src/models/bert.cpp: "token types are hardcoded to zero").

Rank mode (--rank), for the TEST-ONLY cross-encoder the converter writes with
--rank-head SEED. Input:
    {"pairs": [["query", "document"], ...], "seed": SEED}
Output:
    {"scores": [raw score, ...], "probabilities": [sigmoid(score), ...], "tokens": [[ids], ...]}
The token sequence is the one llama.cpp's server builds for a rerank request
on a model without a "rerank" chat template, format_prompt_rerank() in
tools/server/server-common.cpp (llama.cpp vendored in llama_cpp_python 0.3.36,
lines 1839-1882):
    [BOS if add_bos] query [EOS if add_eos] [SEP if add_sep] document [EOS if add_eos]
with query and document tokenized without special tokens. The converted GGUF
has bos = [CLS] 101, eos = sep = [SEP] 102, add_bos = add_eos = true and
add_sep = false, so the sequence is
    [CLS] query [SEP] document [SEP]
with positions 0..n-1 and token type 0 throughout (Hugging Face's pair
encoding would give the document token type 1; llama.cpp does not). The score
is llama.cpp's LLAMA_POOLING_TYPE_RANK head (src/llama-graph.cpp,
build_pooling) on the final hidden state h0 of the first token ([CLS]; a
non-causal model takes the lowest position, llm_graph_input_cls::set_input):
    score = cls.output.weight @ tanh(cls.weight @ h0 + cls.bias) + cls.output.bias
with the head rebuilt from SEED exactly as convert_minilm.py --rank-head draws
it (rank_head() below). "probabilities" is sigmoid(score), the usual reading
of a one-logit cross-encoder; llama.cpp itself returns the raw score.

Tokens: Hugging Face's tokenizer and llama.cpp's WPM tokenizer
(src/llama-vocab.cpp, llm_tokenizer_wpm_session, on the converted vocabulary)
give the same ids for ordinary text, accents (stripped), CJK ideographs, Greek,
Cyrillic, emoji, punctuation, control characters and Unicode spaces. They
differ (checked against the extension's libllama) on: words over 100
characters (HF: [UNK]; llama.cpp: word pieces); Hangul syllables (llama.cpp's
NFD maps a code point to one code point, so only the leading consonant jamo
survives); spacing combining marks such as Devanagari vowel signs (llama.cpp
drops every \p{M}, HF only Mn); literal "[CLS]"-style text (HF always maps it
to the special id, llama.cpp only when tokenizing with parse_special). The
"tokens" output lets a test compare ids before it compares vectors.

--gelu tanh swaps BERT's exact erf GELU for the tanh approximation that
ggml's GELU computes (llama.cpp's BERT FFN is LLM_FFN_GELU). Measured against
llama.cpp itself (the llama-cpp-sys-2 0.1.161 build this project links) on
the F16 GGUF, the relative L2 error of a pooled vector is about 1.3e-3 with
erf and about 4e-4 with tanh (cosine similarity > 0.99999 either way).

--round-f16 rounds, before computing, every weight that the F16 GGUF stores as
F16 (word embeddings, the attention and FFN matrices, the two head matrices)
to float16 and back, to separate the file's storage error from the rest.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

RANK_HEAD_STD = 0.05


def rank_head(seed: int, n_embd: int, n_cls_out: int = 1) -> dict[str, np.ndarray]:
    """The test head, drawn as convert_minilm.py's rank_head() draws it (same order, shapes, dtype)."""
    rs = np.random.RandomState(seed)
    shapes = [
        ("cls.weight", (n_embd, n_embd)),
        ("cls.bias", (n_embd,)),
        ("cls.output.weight", (n_cls_out, n_embd)),
        ("cls.output.bias", (n_cls_out,)),
    ]
    return {name: rs.normal(0.0, RANK_HEAD_STD, shape).astype(np.float32) for name, shape in shapes}


def to_f16_and_back(w: np.ndarray) -> np.ndarray:
    return w.astype(np.float32).astype(np.float16).astype(np.float64)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu(x: np.ndarray) -> np.ndarray:
    """BERT's "gelu": the exact x * Phi(x) (erf), not the tanh approximation."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """The tanh approximation, which ggml's GELU (llama.cpp's LLM_FFN_GELU) computes."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


class Bert:
    def __init__(self, model_dir: Path, round_f16: bool, gelu_kind: str = "erf"):
        self.gelu = gelu if gelu_kind == "erf" else gelu_tanh
        self.config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        raw = load_file(str(model_dir / "model.safetensors"))
        self.w = {}
        for name, t in raw.items():
            if name.startswith("bert."):
                name = name[5:]
            t = t.astype(np.float64)
            # the F16 GGUF keeps 1-D tensors, position and token type embeddings in F32
            if round_f16 and t.ndim == 2 and name not in (
                    "embeddings.position_embeddings.weight", "embeddings.token_type_embeddings.weight"):
                t = to_f16_and_back(t)
            self.w[name] = t
        self.round_f16 = round_f16
        self.eps = float(self.config["layer_norm_eps"])
        self.n_layer = int(self.config["num_hidden_layers"])
        self.n_head = int(self.config["num_attention_heads"])
        self.n_embd = int(self.config["hidden_size"])
        self.n_ctx = int(self.config["max_position_embeddings"])
        if self.config.get("hidden_act", "gelu") != "gelu":
            raise SystemExit(f"error: hidden_act {self.config['hidden_act']!r} is not the erf GELU this implements")

    def linear(self, x: np.ndarray, prefix: str) -> np.ndarray:
        return x @ self.w[prefix + ".weight"].T + self.w[prefix + ".bias"]

    def hidden_states(self, ids: list[int]) -> np.ndarray:
        """Final hidden states, (n_tokens, n_embd), of one sequence with token type 0."""
        n = len(ids)
        if n > self.n_ctx:
            raise SystemExit(f"error: {n} tokens, more than the model's {self.n_ctx} positions")
        w = self.w
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        d = self.n_embd // self.n_head
        for il in range(self.n_layer):
            p = f"encoder.layer.{il}."
            q = self.linear(x, p + "attention.self.query").reshape(n, self.n_head, d).transpose(1, 0, 2)
            k = self.linear(x, p + "attention.self.key").reshape(n, self.n_head, d).transpose(1, 0, 2)
            v = self.linear(x, p + "attention.self.value").reshape(n, self.n_head, d).transpose(1, 0, 2)
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(d)
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            ctx = (probs @ v).transpose(1, 0, 2).reshape(n, self.n_embd)
            attn = self.linear(ctx, p + "attention.output.dense")
            x = layer_norm(x + attn, w[p + "attention.output.LayerNorm.weight"],
                           w[p + "attention.output.LayerNorm.bias"], self.eps)
            ffn = self.linear(self.gelu(self.linear(x, p + "intermediate.dense")), p + "output.dense")
            x = layer_norm(x + ffn, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps)
        return x


class WordPiece:
    """Hugging Face's tokenizer for the model: tokenizer.json, else vocab.txt with config's lowercasing."""

    def __init__(self, model_dir: Path):
        if (model_dir / "tokenizer.json").is_file():
            from tokenizers import Tokenizer
            self.tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        else:
            from tokenizers import BertWordPieceTokenizer
            cfg_path = model_dir / "tokenizer_config.json"
            cfg = json.loads(cfg_path.read_text(encoding="utf-8")) if cfg_path.is_file() else {}
            self.tok = BertWordPieceTokenizer(str(model_dir / "vocab.txt"), lowercase=cfg.get("do_lower_case", True))
        # tokenizer.json asks for truncation and padding to 128; llama.cpp does neither
        self.tok.no_truncation()
        self.tok.no_padding()
        self.cls = self.tok.token_to_id("[CLS]")
        self.sep = self.tok.token_to_id("[SEP]")

    def with_specials(self, text: str) -> list[int]:
        """[CLS] text [SEP], as llama.cpp's WPM tokenizer adds them for add_special = true."""
        ids = self.tok.encode(text).ids
        assert ids[0] == self.cls and ids[-1] == self.sep, ids
        return ids

    def plain(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False).ids


def embed(model: Bert, tok: WordPiece, texts: list[str], normalize: bool) -> dict:
    vectors, tokens = [], []
    for text in texts:
        ids = tok.with_specials(text)
        v = model.hidden_states(ids).mean(axis=0)
        if normalize:
            v = v / np.linalg.norm(v)
        vectors.append([float(x) for x in v])
        tokens.append(ids)
    return {"vectors": vectors, "tokens": tokens}


def rank(model: Bert, tok: WordPiece, pairs: list[list[str]], seed: int) -> dict:
    head = rank_head(seed, model.n_embd)
    w1 = head["cls.weight"].astype(np.float64)
    w2 = head["cls.output.weight"].astype(np.float64)
    if model.round_f16:
        w1, w2 = to_f16_and_back(w1), to_f16_and_back(w2)
    b1 = head["cls.bias"].astype(np.float64)
    b2 = head["cls.output.bias"].astype(np.float64)
    scores, probabilities, tokens = [], [], []
    for query, document in pairs:
        # format_prompt_rerank with add_bos = add_eos = true, add_sep = false
        ids = [tok.cls] + tok.plain(query) + [tok.sep] + tok.plain(document) + [tok.sep]
        h0 = model.hidden_states(ids)[0]
        score = float((w2 @ np.tanh(w1 @ h0 + b1) + b2)[0])
        scores.append(score)
        probabilities.append(1.0 / (1.0 + math.exp(-score)))
        tokens.append(ids)
    return {"scores": scores, "probabilities": probabilities, "tokens": tokens}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input", nargs="?", help="JSON input file (default: stdin)")
    default_dir = os.environ.get("INFER_EMBEDDING_SOURCE") or str(
        Path(__file__).resolve().parent.parent / "models" / "all-MiniLM-L6-v2")
    parser.add_argument("--model-dir", default=default_dir,
                        help="model.safetensors + config.json + tokenizer files (default: %(default)s)")
    parser.add_argument("--rank", action="store_true", help='score {"pairs": [[q, d], ...], "seed": N} instead')
    parser.add_argument("--round-f16", action="store_true", help="round the weights the F16 GGUF stores as F16")
    parser.add_argument("--normalize", action="store_true", help="L2-normalise the embedding vectors")
    parser.add_argument("--gelu", choices=["erf", "tanh"], default="erf",
                        help="erf: BERT's exact GELU (default); tanh: the approximation ggml computes")
    args = parser.parse_args()

    request = json.load(open(args.input, encoding="utf-8") if args.input else sys.stdin)
    model_dir = Path(args.model_dir)
    model = Bert(model_dir, args.round_f16, args.gelu)
    tok = WordPiece(model_dir)
    if args.rank:
        result = rank(model, tok, request["pairs"], int(request["seed"]))
    else:
        result = embed(model, tok, request["texts"], args.normalize)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

//! What a model's shape bounds: the most a saved sequence can take, which
//! the prompt store believes of its entries.

use llama_cpp_2::model::LlamaModel;

use crate::engine::cache::prefix_store::StateBound;

/// The most a saved sequence of `model` can take (the prompt store believes
/// no entry beyond it): its attention's widest row — the embedding, or the
/// heads times their key or value length, from the GGUF's metadata — for
/// every layer.
pub(super) fn state_bound(model: &LlamaModel) -> StateBound {
    let arch = model
        .meta_val_str("general.architecture")
        .unwrap_or_default();
    let length = |what: &str| {
        model
            .meta_val_str(&format!("{arch}.attention.{what}_length"))
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let heads = u64::from(model.n_head().max(model.n_head_kv()).max(1));
    let embd = u64::try_from(model.n_embd()).unwrap_or(0);
    let width = embd.max(heads * length("key")).max(heads * length("value"));
    StateBound::for_shape(model.n_layer(), width)
}

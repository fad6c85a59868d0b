//! Log-probabilities as PHP arrays, in OpenAI's shape
//! (`logprobs.content[i]`) with llama-server's `id` and whether the token
//! was forced.

use ext_php_rs::boxed::ZBox;
use ext_php_rs::prelude::*;
use ext_php_rs::types::ZendHashTable;

use crate::backend::generation::TokenLogprob;

/// A list with one array per token: `id` (null from a server whose API names
/// tokens by their text only), `token` (its text, cut to valid
/// UTF-8 as llama-server cuts it), `bytes` (the whole text, byte by byte),
/// `logprob`, `forced`, and `top_logprobs`: the most likely tokens there,
/// each with `id`, `token`, `bytes` and `logprob`.
pub fn to_php(entries: &[TokenLogprob]) -> PhpResult<ZBox<ZendHashTable>> {
    let mut list = ZendHashTable::with_capacity(entries.len() as u32);
    for entry in entries {
        let mut item = token(entry.id, &entry.bytes, entry.logprob)?;
        item.insert("forced", entry.forced)?;
        let mut top = ZendHashTable::with_capacity(entry.top.len() as u32);
        for alt in &entry.top {
            top.push(token(alt.id, &alt.bytes, alt.logprob)?)?;
        }
        item.insert("top_logprobs", top)?;
        list.push(item)?;
    }
    Ok(list)
}

fn token(id: Option<i32>, bytes: &[u8], logprob: f64) -> PhpResult<ZBox<ZendHashTable>> {
    let mut item = ZendHashTable::new();
    item.insert("id", id.map(i64::from))?;
    item.insert("token", valid_prefix(bytes))?;
    item.insert(
        "bytes",
        bytes.iter().map(|&b| i64::from(b)).collect::<Vec<i64>>(),
    )?;
    item.insert("logprob", logprob)?;
    Ok(item)
}

/// The longest prefix of `bytes` that is valid UTF-8.
fn valid_prefix(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(e) => String::from_utf8_lossy(&bytes[..e.valid_up_to()]).into_owned(),
    }
}

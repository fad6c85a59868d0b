//! What a server's answers may weigh and claim. A server is outside this
//! process: every byte it sends is counted against a limit as it arrives,
//! and every figure it reports is checked against what was asked before it
//! reaches the caller. The limits are one table here (docs/security.md,
//! "Limits on what a server sends", lists them with their settings).

use crate::backend::generation::TokenLogprob;

const MIB: u64 = 1024 * 1024;

/// The default of `max_response_bytes`: the most one JSON answer (an
/// embeddings batch, a token list) may weigh. An answer is read whole
/// before it is parsed, and parsed into typed lists (not a JSON tree), so
/// a worker's peak is about twice this.
pub const DEFAULT_MAX_RESPONSE: u64 = 32 * MIB;
/// The most a server's description (`/props`, `/v1/models`,
/// `/lora-adapters`, `/health`) may weigh, whatever `max_response_bytes`:
/// a chat template and a few settings, a few kilobytes in practice.
pub const MAX_DESCRIPTION: u64 = 4 * MIB;
/// The most one server-sent event may weigh (all its lines): one token's
/// delta with its probabilities, or the final statistics (llama-server's
/// carries the prompt's text), weigh a few kilobytes.
pub const MAX_EVENT: usize = 4 * MIB as usize;
/// The most of an error page (a status other than 200) that is read.
pub const MAX_ERROR_BODY: u64 = 64 * 1024;
/// The most characters of a server's own words an error message quotes.
pub const MAX_QUOTED_CHARS: usize = 200;
/// How many tokens past `maxTokens` a server may count (one: a server that
/// counts the end-of-generation token it sampled).
pub const TOKEN_SLACK: u32 = 1;
/// How many events a stream may send besides one per token (a role chunk,
/// the finish and usage chunks, chunks without text).
pub const EVENT_SLACK: u32 = 64;

/// The most tokens a text of `bytes` bytes can be: a tokenizer gives at
/// most one token per byte, plus the few it adds (BOS, EOS, a dummy
/// prefix).
pub fn most_tokens(bytes: usize) -> usize {
    bytes.saturating_add(8)
}

/// The most a `/tokenize` answer for a text of `bytes` bytes may weigh:
/// each of its tokens as an id of up to 10 digits and a comma, plus the
/// fields around the list.
pub fn tokenize_bytes(bytes: usize) -> u64 {
    (most_tokens(bytes) as u64).saturating_mul(12) + 4096
}

/// What a generation asked for, that the server's figures must fit.
#[derive(Debug, Clone, Copy)]
pub struct Asked {
    /// The most tokens the request let the server generate.
    pub max_tokens: u32,
    /// How many alternatives each token's probabilities may list (`None`:
    /// none were asked).
    pub top: Option<u32>,
    /// The model's vocabulary size, when the server said.
    pub n_vocab: Option<u32>,
}

impl Asked {
    /// The most tokens the server may say it generated.
    pub fn most_tokens(&self) -> u32 {
        self.max_tokens.saturating_add(TOKEN_SLACK)
    }

    /// The most events a stream may send.
    pub fn most_events(&self) -> u32 {
        self.most_tokens()
            .saturating_mul(2)
            .saturating_add(EVENT_SLACK)
    }

    /// `claimed` tokens generated (`figure` names it) must fit `maxTokens`.
    pub fn tokens(&self, figure: &str, claimed: u64) -> Result<(), String> {
        if claimed > u64::from(self.most_tokens()) {
            return Err(format!(
                "{figure} = {claimed}, more than the {} tokens asked for (maxTokens {}, plus {TOKEN_SLACK})",
                self.most_tokens(),
                self.max_tokens
            ));
        }
        Ok(())
    }

    /// Cached tokens cannot be more than the prompt's.
    pub fn cached(&self, cached: u32, prompt: u32) -> Result<(), String> {
        if cached > prompt {
            return Err(format!(
                "cached tokens = {cached}, more than the prompt's {prompt} tokens"
            ));
        }
        Ok(())
    }

    /// One token's probabilities: log-probabilities that are numbers ≤ 0
    /// (−∞ is a probability of 0), ids in the vocabulary, no more
    /// alternatives than asked (one more for a server that adds the chosen
    /// token to its list, as OpenAI's completions API does).
    pub fn token(&self, token: &TokenLogprob) -> Result<(), String> {
        let asked = self.top.unwrap_or(0).max(1);
        if token.top.len() > asked as usize + 1 {
            return Err(format!(
                "a token with {} alternatives in its top log-probabilities, more than the {asked} asked for",
                token.top.len()
            ));
        }
        self.logprob(token.id, token.logprob)?;
        token
            .top
            .iter()
            .try_for_each(|alt| self.logprob(alt.id, alt.logprob))
    }

    fn logprob(&self, id: Option<i32>, logprob: f64) -> Result<(), String> {
        // A log-probability a hair above 0 is a rounding of 0.
        if logprob.is_nan() || logprob > 1e-6 {
            return Err(format!("a log-probability of {logprob}, not a number ≤ 0"));
        }
        if let Some(id) = id {
            let past = self.n_vocab.is_some_and(|n| i64::from(id) >= i64::from(n));
            if id < 0 || past {
                return Err(match self.n_vocab {
                    Some(n) => format!("token id {id}, outside the vocabulary (0 to {})", n - 1),
                    None => format!("token id {id}, which is negative"),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::generation::TopLogprob;

    fn token(id: i32, logprob: f64, top: usize) -> TokenLogprob {
        let alt = TopLogprob {
            id: Some(0),
            bytes: Vec::new(),
            logprob: -1.0,
        };
        TokenLogprob {
            id: Some(id),
            bytes: Vec::new(),
            logprob,
            forced: false,
            top: vec![alt; top],
            text_end: 0,
        }
    }

    #[test]
    fn figures_that_do_not_fit_the_request_are_named() {
        let asked = Asked {
            max_tokens: 1,
            top: Some(2),
            n_vocab: Some(100),
        };
        assert!(asked.tokens("tokens_predicted", 2).is_ok());
        assert_eq!(
            asked.tokens("tokens_predicted", 4_294_967_295).unwrap_err(),
            "tokens_predicted = 4294967295, more than the 2 tokens asked for (maxTokens 1, plus 1)"
        );
        assert!(asked.cached(3, 3).is_ok());
        assert_eq!(
            asked.cached(4, 3).unwrap_err(),
            "cached tokens = 4, more than the prompt's 3 tokens"
        );
        assert!(asked.token(&token(99, 0.0, 3)).is_ok());
        assert!(asked.token(&token(5, f64::NEG_INFINITY, 0)).is_ok());
        assert_eq!(
            asked.token(&token(5, f64::NAN, 0)).unwrap_err(),
            "a log-probability of NaN, not a number ≤ 0"
        );
        assert_eq!(
            asked.token(&token(5, 0.5, 0)).unwrap_err(),
            "a log-probability of 0.5, not a number ≤ 0"
        );
        assert_eq!(
            asked.token(&token(-1, -1.0, 0)).unwrap_err(),
            "token id -1, outside the vocabulary (0 to 99)"
        );
        assert_eq!(
            asked.token(&token(100, -1.0, 0)).unwrap_err(),
            "token id 100, outside the vocabulary (0 to 99)"
        );
        assert_eq!(
            asked.token(&token(1, -1.0, 4)).unwrap_err(),
            "a token with 4 alternatives in its top log-probabilities, more than the 2 asked for"
        );
        let unknown = Asked {
            n_vocab: None,
            ..asked
        };
        assert_eq!(
            unknown.token(&token(-7, -1.0, 0)).unwrap_err(),
            "token id -7, which is negative"
        );
        assert!(unknown.token(&token(1 << 30, -1.0, 0)).is_ok());
    }

    #[test]
    fn a_token_list_is_bounded_by_its_text() {
        assert_eq!(most_tokens(0), 8);
        assert_eq!(tokenize_bytes(10), 18 * 12 + 4096);
        assert_eq!(most_tokens(usize::MAX), usize::MAX);
    }
}

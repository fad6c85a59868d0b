//! What can go wrong talking to a serving engine, worded for the caller:
//! each error names the server (its address without credentials) and says
//! what happened, in the engine's own words where it gave any.

/// A request to a serving engine failed, or the engine cannot do what the
/// call asks without weakening it.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum RemoteError {
    #[error("invalid server URL \"{url}\": {detail}")]
    BadUrl { url: String, detail: String },
    #[error("cannot reach the server at {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("TLS failure talking to {url}: {detail}")]
    Tls { url: String, detail: String },
    #[error("{url} did not answer within {seconds} s (option \"timeout\")")]
    TimedOut { url: String, seconds: f64 },
    #[error("{url} answered HTTP {status}: {message}{hint}")]
    Status {
        url: String,
        status: u16,
        message: String,
        /// What to check, for the statuses that have an obvious cause.
        hint: &'static str,
    },
    #[error("{url} answered with a body that is not what {engine} sends: {detail}")]
    BadBody {
        url: String,
        engine: &'static str,
        detail: String,
    },
    #[error("{url} sent {what} of more than {limit} bytes ({name}); nothing more was read")]
    TooLarge {
        url: String,
        what: &'static str,
        limit: u64,
        /// The limit, as the caller can change it or look it up.
        name: &'static str,
    },
    #[error("{url} sent {figure}, which does not fit the request; the answer was refused")]
    Implausible { url: String, figure: String },
    #[error("the stream from {url} ended without its final event (the server closed the connection mid-reply)")]
    Truncated { url: String },
    #[error("the server at {url} reported an error mid-stream: {message}")]
    InStream { url: String, message: String },
    #[error("cannot tell which serving engine answers at {url}: {detail}; set option \"engine\" to 'llama-server', 'vllm' or 'sglang'")]
    UnknownEngine { url: String, detail: String },
    #[error("the server at {url} serves no model named \"{model}\" (it serves: {available})")]
    NoSuchModel {
        url: String,
        model: String,
        available: String,
    },
    #[error(
        "the server at {url} serves several models ({available}); choose one with option \"model\""
    )]
    WhichModel { url: String, available: String },
    #[error("the server at {url} serves no model")]
    NoModel { url: String },
    #[error("nCtx = {n_ctx} exceeds the context of the server's slots ({server}); lower nCtx or start the server with a larger context")]
    ContextTooLarge { n_ctx: u32, server: u32 },
    #[error("{engine} cannot express the grammar exactly: {detail}; nothing was sent")]
    Dialect {
        engine: &'static str,
        detail: String,
    },
    #[error("{what} is not available through {engine}: {why}")]
    Unsupported {
        what: &'static str,
        engine: &'static str,
        why: &'static str,
    },
}

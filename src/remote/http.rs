//! The HTTP side of a connection: one `ureq` agent per connected model
//! (keep-alive connections reused across calls), a bearer token, the
//! timeout and the retries, and every transport failure turned into a
//! [`RemoteError`] that names the server and what happened.
//!
//! Every wait is on a clock and every byte is counted: a request that
//! reads a JSON answer ends, whole (connecting, sending, the headers and
//! the body), within the connection's `timeout` or the call's deadline,
//! whichever comes first (ureq's global timeout, which keeps running while
//! the body is read); a streamed answer ends at the call's deadline, and
//! each of its events must arrive within `timeout`, the comments a server
//! sends to keep the connection open included (`super::events`). Answers
//! are read against the limits of [`super::limits`] as their bytes arrive.

use std::io::{BufReader, Read};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde_json::Value as Json;
use ureq::http::Response;
use ureq::Body;

use super::events::{is_timeout, Events};
use super::limits::{MAX_DESCRIPTION, MAX_ERROR_BODY, MAX_QUOTED_CHARS};
use crate::backend::params::{earliest, StopCheck};
use crate::backend::RemoteError;

/// The first pause before a retry; each retry doubles it.
const FIRST_BACKOFF: Duration = Duration::from_millis(200);

/// A bearer token: kept out of `Debug` output and error messages.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: String) -> Self {
        Self(key)
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(hidden)")
    }
}

/// How to reach a server.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The base URL, without a trailing slash.
    pub base: String,
    pub api_key: Option<ApiKey>,
    /// The most a request for a JSON answer takes, whole, and the most
    /// each event of a streamed answer takes to arrive.
    pub timeout: Duration,
    /// The most a JSON answer may weigh (`max_response_bytes`).
    pub max_response: u64,
    /// How many times a request that never reached the server (connection
    /// refused) or that it turned away as unavailable (503) is tried again.
    pub retries: u32,
    pub verify_tls: bool,
    /// Reach the server through this Unix socket, whatever the URL's host.
    pub unix_socket: Option<std::path::PathBuf>,
}

/// The most bytes an answer may weigh, and how an error names what was
/// limited and by which setting.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    pub bytes: u64,
    pub what: &'static str,
    pub name: &'static str,
}

/// The connection to one server.
pub struct Http {
    agent: ureq::Agent,
    config: HttpConfig,
    /// The base URL as errors show it: without credentials.
    shown: String,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http").field("url", &self.shown).finish()
    }
}

/// `url` without the `user:password@` part a URL may carry.
pub fn without_credentials(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            match rest[..authority_end].rfind('@') {
                Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
                None => url.to_owned(),
            }
        }
        None => url.to_owned(),
    }
}

/// Check and normalise a base URL: `http` or `https`, a host, no query or
/// fragment; the trailing slash is dropped.
pub fn base_url(url: &str) -> Result<String, RemoteError> {
    let bad = |detail: &str| RemoteError::BadUrl {
        url: without_credentials(url),
        detail: detail.to_owned(),
    };
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(bad("expected http://host:port or https://host:port"));
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Err(bad("only http and https are supported"));
    }
    if rest.is_empty() || rest.starts_with('/') {
        return Err(bad("no host"));
    }
    if rest.contains('?') || rest.contains('#') {
        return Err(bad("a base URL takes no query or fragment"));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("it contains whitespace or control characters"));
    }
    url.parse::<ureq::http::Uri>()
        .map_err(|e| bad(&e.to_string()))?;
    Ok(url.trim_end_matches('/').to_owned())
}

impl Http {
    pub fn new(config: HttpConfig) -> Self {
        let tls = ureq::tls::TlsConfig::builder()
            .disable_verification(!config.verify_tls)
            .build();
        let agent_config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(config.timeout))
            .timeout_per_read(Some(config.timeout))
            .timeout_per_write(Some(config.timeout))
            .tls_config(tls)
            .user_agent(concat!("displace-infer/", env!("CARGO_PKG_VERSION")))
            .build();
        let (agent, shown) = match &config.unix_socket {
            Some(path) => (
                ureq::Agent::with_parts(
                    agent_config,
                    super::unix::UnixConnector { path: path.clone() },
                    ureq::unversioned::resolver::DefaultResolver::default(),
                ),
                format!("unix:{}", path.display()),
            ),
            None => (agent_config.into(), without_credentials(&config.base)),
        };
        Self {
            agent,
            config,
            shown,
        }
    }

    /// The server's address as errors show it.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The most a JSON answer may weigh (`max_response_bytes`).
    pub fn max_response(&self) -> u64 {
        self.config.max_response
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.config.base, path)
    }

    /// When a request for a JSON answer started now must have ended: the
    /// connection's `timeout` from now, or `deadline` if that comes first.
    pub fn until(&self, deadline: Option<Instant>) -> Option<Instant> {
        earliest(Instant::now().checked_add(self.config.timeout), deadline)
    }

    /// GET `path`, a description of the server (its settings, its models),
    /// and read its JSON answer, whole, by `deadline` at the latest.
    pub fn get_json(
        &self,
        path: &str,
        engine: &'static str,
        deadline: Option<Instant>,
    ) -> Result<Json, RemoteError> {
        let until = self.until(deadline);
        let response = self.send(path, None, until)?;
        let limit = Limit {
            bytes: MAX_DESCRIPTION.min(self.config.max_response),
            what: "a description of itself",
            name: "the limit on a server's description",
        };
        let text = self.body_text(response, limit, engine)?;
        self.parse(&text, engine)
    }

    /// POST `body` to `path` and read its JSON answer as a `T`, whole, by
    /// `deadline` at the latest, in at most `limit`'s bytes.
    pub fn post_json<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &Json,
        engine: &'static str,
        deadline: Option<Instant>,
        limit: Limit,
    ) -> Result<T, RemoteError> {
        let until = self.until(deadline);
        let response = self.send(path, Some(body), until)?;
        let text = self.body_text(response, limit, engine)?;
        self.parse(&text, engine)
    }

    /// The limit of `max_response_bytes`, or `bytes` if smaller (an answer
    /// whose size the request bounds), for the error naming `what`.
    pub fn limit(&self, what: &'static str, bytes: Option<u64>) -> Limit {
        match bytes {
            Some(bytes) if bytes < self.config.max_response => Limit {
                bytes,
                what,
                name: "the most the request's text can make",
            },
            _ => Limit {
                bytes: self.config.max_response,
                what,
                name: "option \"max_response_bytes\"",
            },
        }
    }

    /// POST `body` to `path` and return the events of its answer
    /// (server-sent events), once the server has accepted the request.
    /// Reading ends at `stop`'s deadline (or interrupt).
    pub fn post_events(
        &self,
        path: &str,
        body: &Json,
        stop: StopCheck,
    ) -> Result<Events, RemoteError> {
        let response = self.send(path, Some(body), stop.deadline)?;
        let status = response.status().as_u16();
        if status != 200 {
            let text = self.error_body(response);
            return Err(self.status_error(status, &text));
        }
        let reader = response.into_body().into_reader();
        Ok(Events::from_reader(
            Box::new(BufReader::new(reader)),
            &self.shown,
            Some(self.config.timeout),
            stop,
        ))
    }

    /// Send one request, trying again (with a growing pause) while it fails
    /// in a way that leaves the server untouched; all of it, the answer's
    /// body included, ends by `until`.
    fn send(
        &self,
        path: &str,
        body: Option<&Json>,
        until: Option<Instant>,
    ) -> Result<Response<Body>, RemoteError> {
        let url = self.url(path);
        let payload = body.map(Json::to_string);
        let mut backoff = FIRST_BACKOFF;
        let mut attempt = 0;
        loop {
            let left = match until {
                Some(until) => match until.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => return Err(self.timed_out()),
                },
                None => None,
            };
            let result = match &payload {
                Some(payload) => self
                    .authorised(self.agent.post(&url))
                    .content_type("application/json")
                    .config()
                    .timeout_global(left)
                    .build()
                    .send(payload.as_bytes()),
                None => self
                    .authorised(self.agent.get(&url))
                    .config()
                    .timeout_global(left)
                    .build()
                    .call(),
            };
            let retry = match &result {
                Err(ureq::Error::ConnectionFailed) | Err(ureq::Error::HostNotFound) => true,
                Err(ureq::Error::Io(e)) => e.kind() == std::io::ErrorKind::ConnectionRefused,
                Ok(response) => response.status().as_u16() == 503,
                Err(_) => false,
            };
            let in_time = until.is_none_or(|until| Instant::now() + backoff < until);
            if retry && in_time && attempt < self.config.retries {
                attempt += 1;
                std::thread::sleep(backoff);
                backoff *= 2;
                continue;
            }
            return result.map_err(|e| self.transport_error(e));
        }
    }

    fn authorised<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match &self.config.api_key {
            Some(ApiKey(key)) => request.header("Authorization", format!("Bearer {key}")),
            None => request,
        }
    }

    fn timed_out(&self) -> RemoteError {
        RemoteError::TimedOut {
            url: self.shown.clone(),
            seconds: self.config.timeout.as_secs_f64(),
        }
    }

    /// The start of an error page: at most [`MAX_ERROR_BODY`] bytes.
    fn error_body(&self, response: Response<Body>) -> String {
        let mut bytes = Vec::new();
        let _ = response
            .into_body()
            .into_reader()
            .take(MAX_ERROR_BODY)
            .read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Read a whole answer, at most `limit`'s bytes; a status other than
    /// 200 is an error with the server's own message.
    fn body_text(
        &self,
        response: Response<Body>,
        limit: Limit,
        engine: &'static str,
    ) -> Result<String, RemoteError> {
        let status = response.status().as_u16();
        if status != 200 {
            let text = self.error_body(response);
            return Err(self.status_error(status, &text));
        }
        response
            .into_body()
            .into_with_config()
            .limit(limit.bytes)
            .read_to_string()
            .map_err(|e| match e {
                ureq::Error::Timeout(_) => self.timed_out(),
                ureq::Error::Io(e) if is_timeout(&e) => self.timed_out(),
                ureq::Error::BodyExceedsLimit(_) => RemoteError::TooLarge {
                    url: self.shown.clone(),
                    what: limit.what,
                    limit: limit.bytes,
                    name: limit.name,
                },
                other => RemoteError::BadBody {
                    url: self.shown.clone(),
                    engine,
                    detail: format!("the body could not be read whole ({other})"),
                },
            })
    }

    /// An answer's JSON, as a `T`.
    fn parse<T: DeserializeOwned>(
        &self,
        text: &str,
        engine: &'static str,
    ) -> Result<T, RemoteError> {
        serde_json::from_str(text).map_err(|e| RemoteError::BadBody {
            url: self.shown.clone(),
            engine,
            detail: format!("{e} (body starts {:?})", quoted(text)),
        })
    }

    /// An HTTP error status, with the message the server put in its body.
    fn status_error(&self, status: u16, body: &str) -> RemoteError {
        let hint = match status {
            401 | 403 => " (check option \"api_key\")",
            404 => " (is this the base URL of a llama-server, vLLM or SGLang server?)",
            _ => "",
        };
        RemoteError::Status {
            url: self.shown.clone(),
            status,
            message: error_message(body),
            hint,
        }
    }

    fn transport_error(&self, e: ureq::Error) -> RemoteError {
        let url = self.shown.clone();
        match e {
            ureq::Error::Timeout(_) => RemoteError::TimedOut {
                url,
                seconds: self.config.timeout.as_secs_f64(),
            },
            ureq::Error::Tls(detail) => RemoteError::Tls {
                url,
                detail: detail.to_owned(),
            },
            ureq::Error::Rustls(e) => RemoteError::Tls {
                url,
                detail: e.to_string(),
            },
            ureq::Error::Io(e) if is_timeout(&e) => RemoteError::TimedOut {
                url,
                seconds: self.config.timeout.as_secs_f64(),
            },
            // rustls reports a failed handshake through the socket's error.
            ureq::Error::Io(e)
                if e.kind() == std::io::ErrorKind::InvalidData
                    && self.config.base.to_ascii_lowercase().starts_with("https:") =>
            {
                RemoteError::Tls {
                    url,
                    detail: e.to_string(),
                }
            }
            ureq::Error::HostNotFound => RemoteError::Unreachable {
                url,
                detail: "host not found".to_owned(),
            },
            other => RemoteError::Unreachable {
                url,
                detail: other.to_string(),
            },
        }
    }
}

/// The message of an error body: the `message` (or `error`, or `detail`)
/// an engine puts in its JSON, else the body itself; either way quoted
/// short, on one line, without markup ([`quoted`]).
pub fn error_message(body: &str) -> String {
    let json: Option<Json> = serde_json::from_str(body).ok();
    let from_json = json.as_ref().and_then(|j| {
        let error = j.get("error");
        error
            .and_then(|e| e.get("message"))
            .or_else(|| j.get("message"))
            .or_else(|| error.filter(|e| e.is_string()))
            .or_else(|| j.get("detail"))
            .and_then(|m| {
                m.as_str()
                    .map(str::to_owned)
                    .or_else(|| Some(m.to_string()))
            })
    });
    let text = match &from_json {
        Some(message) => message.as_str(),
        None => body,
    };
    match quoted(text) {
        q if q.is_empty() => "(empty body)".to_owned(),
        q => q,
    }
}

/// Words from a server, fit to quote in an error message: HTML tags
/// dropped, control characters and runs of white space made one space,
/// trimmed, at most [`MAX_QUOTED_CHARS`] characters (then `…`).
pub fn quoted(text: &str) -> String {
    let mut out = String::new();
    let mut count = 0;
    let mut in_tag = false;
    let mut space = false;
    // A `<` is a tag's start only when a `>` follows somewhere.
    let last_close = text.rfind('>');
    for (at, c) in text.char_indices() {
        if in_tag {
            in_tag = c != '>';
            continue;
        }
        if c == '<' && last_close.is_some_and(|close| close > at) {
            in_tag = true;
            space = !out.is_empty();
            continue;
        }
        if c.is_whitespace() || c.is_control() {
            space = !out.is_empty();
            continue;
        }
        // Bidirectional overrides and other invisible formatting.
        if matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
        {
            continue;
        }
        if count + usize::from(space) >= MAX_QUOTED_CHARS {
            out.push('…');
            return out;
        }
        if space {
            out.push(' ');
            count += 1;
            space = false;
        }
        out.push(c);
        count += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_credentials_and_are_checked() {
        assert_eq!(
            without_credentials("https://u:secret@host:8080/v1"),
            "https://host:8080/v1"
        );
        assert_eq!(without_credentials("http://host/a@b"), "http://host/a@b");
        assert_eq!(
            base_url("http://127.0.0.1:8080/").unwrap(),
            "http://127.0.0.1:8080"
        );
        for bad in [
            "ftp://x",
            "127.0.0.1:8080",
            "http://",
            "http://h?x=1",
            "http://h /",
        ] {
            assert!(
                matches!(base_url(bad), Err(RemoteError::BadUrl { .. })),
                "{bad}"
            );
        }
        let Err(RemoteError::BadUrl { url, .. }) = base_url("ftp://u:secret@h") else {
            panic!("accepted");
        };
        assert!(!url.contains("secret"));
    }

    #[test]
    fn error_messages_come_from_the_engines_json() {
        assert_eq!(
            error_message(r#"{"error":{"code":500,"message":"boom","type":"server_error"}}"#),
            "boom"
        );
        assert_eq!(
            error_message(r#"{"object":"error","message":"bad model"}"#),
            "bad model"
        );
        assert_eq!(error_message(r#"{"detail":"Not Found"}"#), "Not Found");
        assert_eq!(
            error_message(r#"{"error":"Invalid API Key"}"#),
            "Invalid API Key"
        );
        assert_eq!(error_message("<html>oops</html>"), "oops");
        assert_eq!(error_message(""), "(empty body)");
    }

    #[test]
    fn a_servers_words_are_quoted_short_on_one_line_without_markup() {
        let page = "<html><head><title>403 Forbidden</title></head>\r\n<body>\n<h1>Forbidden</h1>\x07 secret\u{202e}</body></html>";
        assert_eq!(error_message(page), "403 Forbidden Forbidden secret");
        let long = format!("{{\"error\":{{\"message\":\"{}\"}}}}", "a\\n".repeat(500));
        let message = error_message(&long);
        assert!(message.chars().count() <= MAX_QUOTED_CHARS + 1, "{message}");
        assert!(
            message.ends_with('…') && !message.contains('\n'),
            "{message}"
        );
        // A `<` that opens no tag stays.
        assert_eq!(quoted("1 < 2"), "1 < 2");
        assert_eq!(
            quoted("x".repeat(300).as_str()),
            format!("{}…", "x".repeat(MAX_QUOTED_CHARS))
        );
    }
}

//! The HTTP side of a connection: one `ureq` agent per connected model
//! (keep-alive connections reused across calls), a bearer token, the
//! timeout and the retries, and every transport failure turned into a
//! [`RemoteError`] that names the server and what happened.

use std::io::{BufRead, BufReader, Read};
use std::time::Duration;

use serde_json::Value as Json;
use ureq::http::Response;
use ureq::Body;

use crate::backend::RemoteError;

/// The most a JSON answer may weigh (embeddings of long lists are large).
const MAX_BODY: u64 = 512 * 1024 * 1024;
/// The most one server-sent event may weigh (all its lines): one token's
/// delta, or the final statistics, weigh a few kilobytes.
const MAX_EVENT: usize = 16 * 1024 * 1024;
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
    /// Connecting, and each wait for bytes from the server.
    pub timeout: Duration,
    /// How many times a request that never reached the server (connection
    /// refused) or that it turned away as unavailable (503) is tried again.
    pub retries: u32,
    pub verify_tls: bool,
    /// Reach the server through this Unix socket, whatever the URL's host.
    pub unix_socket: Option<std::path::PathBuf>,
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

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.config.base, path)
    }

    /// GET `path` and read its JSON answer.
    pub fn get_json(&self, path: &str, engine: &'static str) -> Result<Json, RemoteError> {
        let response = self.send(path, None)?;
        self.json_body(response, engine)
    }

    /// POST `body` to `path` and read its JSON answer.
    pub fn post_json(
        &self,
        path: &str,
        body: &Json,
        engine: &'static str,
    ) -> Result<Json, RemoteError> {
        let response = self.send(path, Some(body))?;
        self.json_body(response, engine)
    }

    /// POST `body` to `path` and return the events of its answer
    /// (server-sent events), once the server has accepted the request.
    pub fn post_events(&self, path: &str, body: &Json) -> Result<Events, RemoteError> {
        let response = self.send(path, Some(body))?;
        let status = response.status().as_u16();
        let reader = response.into_body().into_reader();
        if status != 200 {
            let mut text = String::new();
            let _ = BufReader::new(reader)
                .take(1 << 20)
                .read_to_string(&mut text);
            return Err(self.status_error(status, &text));
        }
        Ok(Events {
            reader: Box::new(BufReader::new(reader)),
            url: self.shown.clone(),
            seconds: self.config.timeout.as_secs_f64(),
            ended: false,
        })
    }

    /// Send one request, trying again (with a growing pause) while it fails
    /// in a way that leaves the server untouched.
    fn send(&self, path: &str, body: Option<&Json>) -> Result<Response<Body>, RemoteError> {
        let url = self.url(path);
        let payload = body.map(Json::to_string);
        let mut backoff = FIRST_BACKOFF;
        let mut attempt = 0;
        loop {
            let result = match &payload {
                Some(payload) => self
                    .authorised(self.agent.post(&url))
                    .content_type("application/json")
                    .send(payload.as_bytes()),
                None => self.authorised(self.agent.get(&url)).call(),
            };
            let retry = match &result {
                Err(ureq::Error::ConnectionFailed) | Err(ureq::Error::HostNotFound) => true,
                Err(ureq::Error::Io(e)) => e.kind() == std::io::ErrorKind::ConnectionRefused,
                Ok(response) => response.status().as_u16() == 503,
                Err(_) => false,
            };
            if retry && attempt < self.config.retries {
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

    /// Read a whole answer as JSON; a status other than 200 is an error
    /// with the server's own message.
    fn json_body(
        &self,
        response: Response<Body>,
        engine: &'static str,
    ) -> Result<Json, RemoteError> {
        let status = response.status().as_u16();
        let text = response
            .into_body()
            .into_with_config()
            .limit(MAX_BODY)
            .read_to_string()
            .map_err(|e| match e {
                ureq::Error::Timeout(_) => RemoteError::TimedOut {
                    url: self.shown.clone(),
                    seconds: self.config.timeout.as_secs_f64(),
                },
                ureq::Error::BodyExceedsLimit(_) => RemoteError::TooLarge {
                    url: self.shown.clone(),
                    what: "an answer",
                    limit: MAX_BODY,
                },
                other => RemoteError::BadBody {
                    url: self.shown.clone(),
                    engine,
                    detail: format!("the body could not be read whole ({other})"),
                },
            })?;
        if status != 200 {
            return Err(self.status_error(status, &text));
        }
        serde_json::from_str(&text).map_err(|e| RemoteError::BadBody {
            url: self.shown.clone(),
            engine,
            detail: format!("{e} (body starts {:?})", preview(&text)),
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
            ureq::Error::Io(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                RemoteError::TimedOut {
                    url,
                    seconds: self.config.timeout.as_secs_f64(),
                }
            }
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
/// an engine puts in its JSON, else the body itself, shortened.
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
    match from_json {
        Some(message) => message,
        None if body.trim().is_empty() => "(empty body)".to_owned(),
        None => preview(body.trim()),
    }
}

/// The first characters of a body, for an error message.
fn preview(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// One server-sent event's payload.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A `data:` payload.
    Data(String),
    /// An `error:` payload (llama-server writes errors mid-stream this way).
    Error(String),
}

/// The events of a streamed answer, read as they arrive.
pub struct Events {
    reader: Box<dyn BufRead + Send>,
    url: String,
    seconds: f64,
    ended: bool,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events").field("url", &self.url).finish()
    }
}

impl Events {
    /// Events read from `reader` (tests feed recorded streams this way).
    pub fn from_reader(reader: Box<dyn BufRead + Send>, url: &str) -> Self {
        Self {
            reader,
            url: url.to_owned(),
            seconds: 0.0,
            ended: false,
        }
    }

    /// The next event; `None` when the body ends.
    pub fn next_event(&mut self) -> Result<Option<Event>, RemoteError> {
        if self.ended {
            return Ok(None);
        }
        let mut data: Option<String> = None;
        let mut error: Option<String> = None;
        let mut bytes = Vec::new();
        loop {
            bytes.clear();
            let held = data.as_ref().map_or(0, String::len) + error.as_ref().map_or(0, String::len);
            let budget = MAX_EVENT.saturating_sub(held);
            // At most one byte past what is left of the event's budget: a
            // line that long is refused, not read on.
            let read = (&mut self.reader)
                .take(budget as u64 + 1)
                .read_until(b'\n', &mut bytes)
                .map_err(|e| {
                    if e.kind() == std::io::ErrorKind::TimedOut || e.to_string().contains("timeout")
                    {
                        RemoteError::TimedOut {
                            url: self.url.clone(),
                            seconds: self.seconds,
                        }
                    } else {
                        RemoteError::Truncated {
                            url: self.url.clone(),
                        }
                    }
                })?;
            if bytes.len() > budget {
                self.ended = true;
                return Err(RemoteError::TooLarge {
                    url: self.url.clone(),
                    what: "an event",
                    limit: MAX_EVENT as u64,
                });
            }
            let Ok(line) = std::str::from_utf8(&bytes) else {
                self.ended = true;
                return Err(RemoteError::Truncated {
                    url: self.url.clone(),
                });
            };
            if read == 0 {
                self.ended = true;
                return Ok(match (error, data) {
                    (Some(e), _) => Some(Event::Error(e)),
                    (None, Some(d)) => Some(Event::Data(d)),
                    (None, None) => None,
                });
            }
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if let Some(e) = error.take() {
                    return Ok(Some(Event::Error(e)));
                }
                if let Some(d) = data.take() {
                    return Ok(Some(Event::Data(d)));
                }
                continue;
            }
            if line.starts_with(':') {
                continue; // a comment (keep-alive ping)
            }
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (line, ""),
            };
            let slot = match field {
                "data" => &mut data,
                "error" => &mut error,
                _ => continue,
            };
            match slot {
                Some(text) => {
                    text.push('\n');
                    text.push_str(value);
                }
                None => *slot = Some(value.to_owned()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &str) -> Vec<Event> {
        let mut events = Events::from_reader(
            Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
            "http://test",
        );
        let mut out = Vec::new();
        while let Some(e) = events.next_event().unwrap() {
            out.push(e);
        }
        out
    }

    #[test]
    fn events_are_split_at_blank_lines_and_comments_skipped() {
        assert_eq!(
            events("data: {\"a\":1}\n\n: ping\n\ndata: b\ndata: c\n\nerror: {\"m\":2}\n\n"),
            vec![
                Event::Data("{\"a\":1}".into()),
                Event::Data("b\nc".into()),
                Event::Error("{\"m\":2}".into()),
            ]
        );
        assert_eq!(events("data: [DONE]"), vec![Event::Data("[DONE]".into())]);
        assert_eq!(events("data:x\r\n\r\n"), vec![Event::Data("x".into())]);
    }

    #[test]
    fn an_event_past_the_limit_is_refused_and_reading_stops() {
        let many_lines = format!("data: {}\n", "y".repeat(1 << 20)).repeat(17);
        let readers: [Box<dyn BufRead + Send>; 2] = [
            // A line that never ends.
            Box::new(BufReader::new(std::io::repeat(b'x'))),
            // An event of many lines that add up to more than the limit.
            Box::new(std::io::Cursor::new(many_lines.into_bytes())),
        ];
        for reader in readers {
            let mut events = Events::from_reader(reader, "http://test");
            let e = events.next_event().unwrap_err();
            assert!(
                matches!(e, RemoteError::TooLarge { what: "an event", limit, .. } if limit == MAX_EVENT as u64),
                "{e:?}"
            );
            assert_eq!(
                e.to_string(),
                "http://test sent an event of more than 16777216 bytes, more than this client reads; nothing more was read"
            );
            assert!(matches!(events.next_event(), Ok(None)));
        }
        // Just under the limit is read whole.
        let big = "z".repeat(MAX_EVENT - 100);
        assert_eq!(events(&format!("data: {big}\n\n")), vec![Event::Data(big)]);
    }

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
        assert_eq!(error_message("<html>oops</html>"), "<html>oops</html>");
        assert_eq!(error_message(""), "(empty body)");
    }
}

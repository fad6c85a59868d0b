//! The events of a streamed answer (server-sent events), read as they
//! arrive: `data:` and `error:` payloads, comments skipped. Every read is
//! on two clocks — the call's deadline (and interrupt), and the most one
//! event may take to arrive, the comments before it included — and every
//! event is counted against [`MAX_EVENT`], so a server that drips bytes or
//! keeps the connection open with comments holds a call no longer than
//! either clock allows.

use std::io::BufRead;
use std::time::{Duration, Instant};

use super::limits::MAX_EVENT;
use crate::backend::params::StopCheck;
use crate::backend::RemoteError;

/// Whether a read failed on one of ureq's timeouts (a blocked read past
/// the per-read timeout, or the request's global one, which ureq's body
/// reader reports wrapped in an I/O error).
pub fn is_timeout(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::TimedOut
        || e.get_ref()
            .and_then(|inner| inner.downcast_ref::<ureq::Error>())
            .is_some_and(|inner| matches!(inner, ureq::Error::Timeout(_)))
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
    /// The most one event may take to arrive, the comments before it
    /// included (the connection's `timeout`).
    per_event: Option<Duration>,
    /// The call's deadline and interrupt, looked at after every read.
    stop: StopCheck,
    ended: bool,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events").field("url", &self.url).finish()
    }
}

impl Events {
    /// Events read from `reader` (tests feed recorded streams this way),
    /// each within `per_event`, until `stop` comes.
    pub fn from_reader(
        reader: Box<dyn BufRead + Send>,
        url: &str,
        per_event: Option<Duration>,
        stop: StopCheck,
    ) -> Self {
        Self {
            reader,
            url: url.to_owned(),
            per_event,
            stop,
            ended: false,
        }
    }

    fn timed_out(&mut self) -> RemoteError {
        self.ended = true;
        RemoteError::TimedOut {
            url: self.url.clone(),
            seconds: self.per_event.unwrap_or_default().as_secs_f64(),
        }
    }

    /// A timeout when the call's deadline (or interrupt) has come, or the
    /// event begun at `started` is late.
    fn check_clocks(&mut self, started: Instant) -> Result<(), RemoteError> {
        let late = self
            .per_event
            .is_some_and(|limit| started.elapsed() >= limit);
        if late || self.stop.due() {
            return Err(self.timed_out());
        }
        Ok(())
    }

    /// Read one line, with its `\n`, into `bytes`, stopping past `budget`
    /// bytes; the clocks are looked at before every read from the socket,
    /// so a line dripped a byte at a time ends at the deadline too.
    /// Returns how many bytes were read (0: the body ended).
    fn read_line(
        &mut self,
        bytes: &mut Vec<u8>,
        budget: usize,
        started: Instant,
    ) -> Result<usize, RemoteError> {
        let mut read = 0;
        loop {
            self.check_clocks(started)?;
            let available = match self.reader.fill_buf() {
                Ok(available) => available,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) if is_timeout(&e) => return Err(self.timed_out()),
                Err(_) => {
                    self.ended = true;
                    return Err(RemoteError::Truncated {
                        url: self.url.clone(),
                    });
                }
            };
            if available.is_empty() {
                return Ok(read);
            }
            let room = (budget + 1).saturating_sub(bytes.len());
            let window = &available[..available.len().min(room)];
            let (used, complete) = match window.iter().position(|b| *b == b'\n') {
                Some(end) => (end + 1, true),
                None => (window.len(), false),
            };
            bytes.extend_from_slice(&window[..used]);
            self.reader.consume(used);
            read += used;
            if complete || bytes.len() > budget {
                return Ok(read);
            }
        }
    }

    /// The next event; `None` when the body ends.
    pub fn next_event(&mut self) -> Result<Option<Event>, RemoteError> {
        if self.ended {
            return Ok(None);
        }
        let started = Instant::now();
        let mut data: Option<String> = None;
        let mut error: Option<String> = None;
        let mut bytes = Vec::new();
        loop {
            bytes.clear();
            let held = data.as_ref().map_or(0, String::len) + error.as_ref().map_or(0, String::len);
            let budget = MAX_EVENT.saturating_sub(held);
            // At most one byte past what is left of the event's budget: a
            // line that long is refused, not read on.
            let read = self.read_line(&mut bytes, budget, started)?;
            if bytes.len() > budget {
                self.ended = true;
                return Err(RemoteError::TooLarge {
                    url: self.url.clone(),
                    what: "an event",
                    limit: MAX_EVENT as u64,
                    name: "the limit on one event",
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
    use std::io::{BufReader, Read};

    use super::*;

    fn events(text: &str) -> Vec<Event> {
        let mut events = Events::from_reader(
            Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
            "http://test",
            None,
            StopCheck::default(),
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
        let many_lines = format!("data: {}\n", "y".repeat(1 << 20)).repeat(5);
        let readers: [Box<dyn BufRead + Send>; 2] = [
            // A line that never ends.
            Box::new(BufReader::new(std::io::repeat(b'x'))),
            // An event of many lines that add up to more than the limit.
            Box::new(std::io::Cursor::new(many_lines.into_bytes())),
        ];
        for reader in readers {
            let mut events = Events::from_reader(reader, "http://test", None, StopCheck::default());
            let e = events.next_event().unwrap_err();
            assert!(
                matches!(e, RemoteError::TooLarge { what: "an event", limit, .. } if limit == MAX_EVENT as u64),
                "{e:?}"
            );
            assert_eq!(
                e.to_string(),
                "http://test sent an event of more than 4194304 bytes (the limit on one event); nothing more was read"
            );
            assert!(matches!(events.next_event(), Ok(None)));
        }
        // Just under the limit is read whole.
        let big = "z".repeat(MAX_EVENT - 100);
        assert_eq!(events(&format!("data: {big}\n\n")), vec![Event::Data(big)]);
    }

    /// A reader that gives `chunk` once per `pause`, forever: a server
    /// dripping bytes or comments.
    struct Drip {
        chunk: &'static [u8],
        pause: Duration,
    }

    impl Read for Drip {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            std::thread::sleep(self.pause);
            let n = self.chunk.len().min(buf.len());
            buf[..n].copy_from_slice(&self.chunk[..n]);
            Ok(n)
        }
    }

    #[test]
    fn comments_and_dripped_bytes_do_not_hold_an_event_past_its_clocks() {
        let pause = Duration::from_millis(50);
        for chunk in [&b": keep-alive\n"[..], &b"x"[..]] {
            // The connection's timeout for one event.
            let start = Instant::now();
            let reader = BufReader::new(Drip { chunk, pause });
            let mut events = Events::from_reader(
                Box::new(reader),
                "http://test",
                Some(Duration::from_millis(300)),
                StopCheck::default(),
            );
            let e = events.next_event().unwrap_err();
            assert_eq!(
                e.to_string(),
                "http://test did not answer within 0.3 s (option \"timeout\")"
            );
            assert!(
                start.elapsed() < Duration::from_millis(600),
                "{:?}",
                start.elapsed()
            );
            assert!(matches!(events.next_event(), Ok(None)));
            // The call's deadline.
            let start = Instant::now();
            let stop = StopCheck {
                interrupt: None,
                deadline: Some(start + Duration::from_millis(300)),
            };
            let reader = BufReader::new(Drip { chunk, pause });
            let mut events = Events::from_reader(Box::new(reader), "http://test", None, stop);
            assert!(matches!(
                events.next_event(),
                Err(RemoteError::TimedOut { .. })
            ));
            assert!(
                start.elapsed() < Duration::from_millis(600),
                "{:?}",
                start.elapsed()
            );
        }
    }
}

//! HTTP over a Unix socket, for `ureq`: the installation's shared server
//! listens on a socket in its private state directory (see `shared.rs`),
//! which no other user can reach. The connector ignores the URL's host and
//! connects to the socket; the rest (HTTP/1.1, keep-alive, timeouts) is
//! ureq's.

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;

use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, ShutdownHandle,
    Transport,
};

/// Connects every request to the socket at `path`.
#[derive(Debug)]
pub struct UnixConnector {
    pub path: PathBuf,
}

impl<In: Transport> Connector<In> for UnixConnector {
    type Out = Either<In, UnixTransport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        if let Some(chained) = chained {
            return Ok(Some(Either::A(chained)));
        }
        let stream = Arc::new(UnixStream::connect(&self.path)?);
        let handle: Arc<dyn ShutdownHandle> = Arc::new(Handle(Arc::clone(&stream)));
        (details.register_shutdown)(Arc::downgrade(&handle))?;
        let config = details.config;
        Ok(Some(Either::B(UnixTransport {
            stream,
            _handle: handle,
            buffers: LazyBuffers::new(config.input_buffer_size(), config.output_buffer_size()),
        })))
    }
}

/// Lets the agent shut the socket down from another thread.
struct Handle(Arc<UnixStream>);

impl ShutdownHandle for Handle {
    fn shutdown(&self) {
        let _closed = self.0.shutdown(std::net::Shutdown::Both).is_ok();
    }
}

/// One connection to the socket.
pub struct UnixTransport {
    stream: Arc<UnixStream>,
    /// Kept alive while the connection is: the agent holds a weak reference.
    _handle: Arc<dyn ShutdownHandle>,
    buffers: LazyBuffers,
}

impl std::fmt::Debug for UnixTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnixTransport").finish()
    }
}

/// An I/O error as ureq reports it: a timeout as the timeout it was.
fn io_error(e: std::io::Error, timeout: &NextTimeout) -> ureq::Error {
    match e.kind() {
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
            ureq::Error::Timeout(timeout.reason)
        }
        _ => ureq::Error::Io(e),
    }
}

impl Transport for UnixTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let timeout = timeout.for_write();
        self.stream
            .set_write_timeout(timeout.not_zero().map(|t| *t))?;
        let output = self.buffers.output().get(..amount).unwrap_or_default();
        (&*self.stream)
            .write_all(output)
            .map_err(|e| io_error(e, &timeout))
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let timeout = timeout.for_read();
        self.stream
            .set_read_timeout(timeout.not_zero().map(|t| *t))?;
        let input = self.buffers.input_append_buf();
        let amount = loop {
            match (&*self.stream).read(input) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other.map_err(|e| io_error(e, &timeout))?,
            }
        };
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        // Open when a read would block: nothing was sent, nothing was closed.
        if self.stream.set_nonblocking(true).is_err() {
            return false;
        }
        let mut byte = [0u8; 1];
        let open = matches!(
            (&*self.stream).read(&mut byte),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
        );
        self.stream.set_nonblocking(false).is_ok() && open
    }
}

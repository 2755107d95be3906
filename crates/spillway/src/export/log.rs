//! The request log: one JSON line per request, to stdout or to a file
//! rotated by size (`telemetry.request_log`).
//!
//! A background job reads finished entries from the bounded queue that
//! [`super::Telemetry`] fills and serializes each line into a 64 KiB
//! buffer, flushed when it is full and at most [`FLUSH_EVERY`] after its
//! oldest line (so a busy log costs one `write` per buffer, not per line).
//! The writes are plain blocking appends: they land in the page cache in
//! microseconds, and they happen on this job's task, never on a request's. A file that would grow past
//! `max_size` is renamed to `path.1` (the older ones shift to `path.2` …
//! `path.keep`, the oldest deleted) and a new one is started.

use crate::config::{LogTarget, RequestLogConfig};
use crate::journal::Entry;
use prometheus_client::metrics::counter::Counter;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How long a written line may wait in the buffer before it is flushed.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// The writer job.
pub struct RequestLog {
    config: RequestLogConfig,
    rx: mpsc::Receiver<Arc<Entry>>,
    failures: Counter,
}

impl RequestLog {
    /// A writer of the lines that arrive on `rx`; failed writes count in
    /// `failures`.
    pub fn new(config: RequestLogConfig, rx: mpsc::Receiver<Arc<Entry>>, failures: Counter) -> Self {
        Self { config, rx, failures }
    }
}

/// `2026-01-02T03:04:05.678Z` of Unix nanoseconds.
pub fn rfc3339(unix_ns: u64) -> String {
    let secs = unix_ns / 1_000_000_000;
    let (y, mo, d) = crate::health::clock::civil_day(secs / 86_400);
    let rem = secs % 86_400;
    let millis = (unix_ns / 1_000_000) % 1000;
    format!("{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, (rem % 3600) / 60, rem % 60)
}

/// Appends one entry's line, newline included, to `out`.
pub fn line(entry: &Entry, out: &mut Vec<u8>) {
    let ts = rfc3339(entry.start_unix_ns);
    if serde_json::to_writer(&mut *out, &entry.line(Some(&ts))).is_ok() {
        out.push(b'\n');
    }
}

/// Where lines go.
enum Output {
    Stdout(BufWriter<std::io::Stdout>),
    File(Rotating),
}

/// A file rotated by size.
struct Rotating {
    path: PathBuf,
    file: Option<BufWriter<File>>,
    size: u64,
    max_size: u64,
    keep: u32,
}

fn open_append(path: &Path) -> std::io::Result<(BufWriter<File>, u64)> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    Ok((BufWriter::with_capacity(64 * 1024, file), size))
}

fn numbered(path: &Path, n: u32) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(format!(".{n}"));
    PathBuf::from(p)
}

impl Rotating {
    fn write(&mut self, line: &[u8]) -> std::io::Result<()> {
        let len = line.len() as u64;
        if self.size > 0 && self.size + len > self.max_size {
            self.rotate()?;
        }
        if self.file.is_none() {
            let (file, size) = open_append(&self.path)?;
            self.file = Some(file);
            self.size = size;
        }
        if let Some(f) = self.file.as_mut() {
            f.write_all(line)?;
            self.size += len;
        }
        Ok(())
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        if let Some(mut f) = self.file.take() {
            f.flush()?;
        }
        if self.keep == 0 {
            std::fs::remove_file(&self.path)?;
        } else {
            for n in (1..self.keep).rev() {
                let from = numbered(&self.path, n);
                if from.exists() {
                    std::fs::rename(&from, numbered(&self.path, n + 1))?;
                }
            }
            std::fs::rename(&self.path, numbered(&self.path, 1))?;
        }
        self.size = 0;
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().map_or(Ok(()), Write::flush)
    }
}

impl Output {
    fn write(&mut self, line: &[u8]) -> std::io::Result<()> {
        match self {
            Self::Stdout(s) => s.write_all(line),
            Self::File(r) => r.write(line),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Self::Stdout(s) => s.flush(),
            Self::File(r) => r.flush(),
        }
    }
}

impl RequestLog {
    fn output(&self) -> Output {
        match &self.config.target {
            LogTarget::Stdout => Output::Stdout(BufWriter::with_capacity(64 * 1024, std::io::stdout())),
            LogTarget::File(path) => Output::File(Rotating {
                path: path.clone(),
                file: None,
                size: 0,
                max_size: self.config.max_size,
                keep: self.config.keep,
            }),
        }
    }

    fn write(&self, out: &mut Output, buf: &mut Vec<u8>, entry: &Entry) {
        buf.clear();
        line(entry, buf);
        if let Err(e) = out.write(buf) {
            self.failures.inc();
            tracing::warn!(error = %e, "Cannot write the request log; the line is lost.");
        }
    }

    /// Writes every entry that has queued up.
    fn drain(&mut self, out: &mut Output, buf: &mut Vec<u8>) {
        while let Ok(entry) = self.rx.try_recv() {
            self.write(out, buf, &entry);
        }
    }

    fn flush(&self, out: &mut Output) {
        if let Err(e) = out.flush() {
            self.failures.inc();
            tracing::warn!(error = %e, "Cannot flush the request log.");
        }
    }
}

impl crate::supervisor::BackgroundJob for RequestLog {
    fn name(&self) -> &'static str {
        "request-log"
    }

    async fn run(mut self, shutdown: CancellationToken) {
        let (mut out, mut buf) = (self.output(), Vec::with_capacity(1024));
        // When the oldest line not yet flushed was written.
        let mut unflushed: Option<Instant> = None;
        loop {
            let flush_at = unflushed.map(|t| t + FLUSH_EVERY);
            let next = tokio::select! {
                entry = self.rx.recv() => match entry {
                    Some(e) => Some(e),
                    None => break,
                },
                () = super::until(flush_at) => None,
                () = shutdown.cancelled() => break,
            };
            if let Some(entry) = next {
                self.write(&mut out, &mut buf, &entry);
                self.drain(&mut out, &mut buf);
                let since = *unflushed.get_or_insert_with(Instant::now);
                if since.elapsed() < FLUSH_EVERY {
                    continue;
                }
            }
            self.flush(&mut out);
            unflushed = None;
        }
        // What was queued before the stop is still written.
        self.drain(&mut out, &mut buf);
        self.flush(&mut out);
    }
}

#[cfg(test)]
mod tests;

//! Byte copying between client and upstream under one idle deadline shared
//! by both directions: a connection ends when nothing moved either way for
//! the idle limit, not when one direction is merely quiet.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// When bytes last moved on a connection.
#[derive(Debug)]
pub(crate) struct Activity {
    start: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    pub(crate) fn new() -> Self {
        Self {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        self.last_ms
            .store(self.start.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    fn idle_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.start.elapsed().saturating_sub(last)
    }
}

/// Copies from `r` to `w` until end of stream, `limit` bytes, an error, or
/// the connection going idle. Returns the bytes copied.
pub(crate) async fn pump<R, W>(
    r: &mut R,
    w: &mut W,
    activity: &Activity,
    idle: Duration,
    limit: Option<u64>,
) -> std::io::Result<u64>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 16 * 1024];
    let mut total = 0u64;
    loop {
        let want = match limit {
            Some(limit) if total >= limit => return Ok(total),
            Some(limit) => buf.len().min((limit - total) as usize),
            None => buf.len(),
        };
        let n = match tokio::time::timeout(idle, r.read(&mut buf[..want])).await {
            Ok(read) => read?,
            Err(_) if activity.idle_for() >= idle => {
                return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "idle"));
            }
            Err(_) => continue,
        };
        if n == 0 {
            return Ok(total);
        }
        tokio::time::timeout(idle, w.write_all(&buf[..n]))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "write stalled"))??;
        activity.touch();
        total += n as u64;
    }
}

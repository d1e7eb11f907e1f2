//! The terminal's log writer: log lines go to stderr, unless a command
//! drawing on the terminal (a progress bar) installed a hook, which then
//! writes them above what it draws so nothing interleaves.

use std::io::Write;
use std::sync::{Arc, RwLock};

/// Writes one formatted log line (or a message for the person) to the terminal.
pub type ConsoleHook = Arc<dyn Fn(&[u8]) + Send + Sync>;

static HOOK: RwLock<Option<ConsoleHook>> = RwLock::new(None);

/// Set by `init` when the terminal shows warnings and errors only.
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether log lines below warnings are kept off the terminal (a person's
/// command on a terminal): what the person must know is then [`say`]d.
pub fn is_quiet() -> bool {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

pub(crate) fn set_quiet(quiet: bool) {
    QUIET.store(quiet, std::sync::atomic::Ordering::Relaxed);
}

/// Routes log lines and [`say`] through `hook` until [`clear_hook`].
pub fn set_hook(hook: ConsoleHook) {
    *HOOK.write().unwrap_or_else(|e| e.into_inner()) = Some(hook);
}

/// Sends log lines straight to stderr again.
pub fn clear_hook() {
    *HOOK.write().unwrap_or_else(|e| e.into_inner()) = None;
}

fn emit(bytes: &[u8]) {
    let hook = HOOK.read().unwrap_or_else(|e| e.into_inner()).clone();
    match hook {
        Some(hook) => hook(bytes),
        None => {
            let _ = std::io::stderr().lock().write_all(bytes);
        }
    }
}

/// Prints a line for the person at the terminal (stderr), above any
/// progress bar: for what they must see whatever the log level (a signal
/// received, how to stop now).
pub fn say(line: &str) {
    let mut text = line.to_string();
    text.push('\n');
    emit(text.as_bytes());
}

/// The `MakeWriter` of the log layer.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ConsoleWriter;

impl Write for ConsoleWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        emit(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for ConsoleWriter {
    type Writer = ConsoleWriter;

    fn make_writer(&'a self) -> Self::Writer {
        ConsoleWriter
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn a_hook_receives_what_would_go_to_stderr() {
        let seen = Arc::new(Mutex::new(Vec::<u8>::new()));
        let sink = seen.clone();
        set_hook(Arc::new(move |b: &[u8]| {
            sink.lock().unwrap().extend_from_slice(b)
        }));
        say("stopping: signal again to stop now");
        let _ = ConsoleWriter.write(b"WARN a log line\n");
        clear_hook();
        say("not captured");
        let text = String::from_utf8(seen.lock().unwrap().clone()).unwrap();
        assert_eq!(text, "stopping: signal again to stop now\nWARN a log line\n");
    }
}

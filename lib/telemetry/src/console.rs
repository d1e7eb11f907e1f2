//! The terminal's log writer: log lines go to stderr, unless a command
//! drawing on the terminal (a progress bar) installed a hook, which then
//! writes them above what it draws so nothing interleaves.

use std::borrow::Cow;
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
/// received, how to stop now). Control characters in it are escaped.
pub fn say(line: &str) {
    let mut text = printable(line).into_owned();
    text.push('\n');
    emit(text.as_bytes());
}

/// Whether `c` may not reach a terminal or a line-oriented log as it is:
/// C0 and C1 controls and DEL (line breaks, escape sequences), the Unicode
/// line and paragraph separators, and the bidirectional overrides that
/// make text display in another order than it reads.
fn unprintable(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape(c: char, out: &mut String) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
    }
}

/// `text` with the characters `escaped` picks escaped; borrowed when none is.
fn escape_where(text: &str, escaped: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escaped(c) {
            escape(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` with its control characters escaped (`\n`, `\r`, `\t`,
/// `\u{1b}` …), so text that echoes input (a URL, a page's title, a
/// server's message) stays on its one line and cannot drive the terminal.
pub fn printable(text: &str) -> Cow<'_, str> {
    escape_where(text, unprintable)
}

/// One formatted log record with its line breaks (but the last) and its
/// control characters escaped; the escape character stays, since the
/// human format colours with it and the formatter already escapes it in
/// what a record echoes.
fn one_line(record: &[u8]) -> Cow<'_, [u8]> {
    let Ok(text) = std::str::from_utf8(record) else {
        return Cow::Borrowed(record);
    };
    let body = text.strip_suffix('\n').unwrap_or(text);
    match escape_where(body, |c| c != '\x1b' && unprintable(c)) {
        Cow::Borrowed(_) => Cow::Borrowed(record),
        Cow::Owned(mut out) => {
            if body.len() < text.len() {
                out.push('\n');
            }
            Cow::Owned(out.into_bytes())
        }
    }
}

/// The `MakeWriter` of the log layer.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ConsoleWriter;

impl Write for ConsoleWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // The log layer writes each record whole.
        emit(&one_line(buf));
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

    #[test]
    fn control_characters_are_escaped() {
        assert!(matches!(printable("plain text, ünïcode"), Cow::Borrowed(_)));
        assert_eq!(
            printable("http://h/echo\r\nX-Injected: yes\t\u{1b}[31m\u{202e}"),
            "http://h/echo\\r\\nX-Injected: yes\\t\\u{1b}[31m\\u{202e}"
        );
        assert_eq!(
            one_line(b"\x1b[33mWARN\x1b[0m title=a\r\nFAKE line\n").as_ref(),
            b"\x1b[33mWARN\x1b[0m title=a\\r\\nFAKE line\n"
        );
        assert!(matches!(one_line(b"INFO fine\n"), Cow::Borrowed(_)));
    }
}

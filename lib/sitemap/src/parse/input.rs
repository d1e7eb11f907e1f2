//! Turns a response body into a capped byte stream: gzip layers are peeled
//! off by their magic bytes, whatever the URL or content type claims, and
//! the decompressed bytes are counted against the cap as they are read.

use std::cell::Cell;
use std::io::{self, BufRead, BufReader, Read};
use std::rc::Rc;

use flate2::bufread::MultiGzDecoder;

/// Counts the bytes handed out by a [`Capped`] reader and whether it hit the cap.
#[derive(Debug, Clone, Default)]
pub(crate) struct Meter {
    read: Rc<Cell<u64>>,
    exceeded: Rc<Cell<bool>>,
}

impl Meter {
    /// Returns the bytes read so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.read.get()
    }

    /// Says whether the stream went past the cap.
    pub(crate) fn exceeded(&self) -> bool {
        self.exceeded.get()
    }
}

/// A reader that fails once more than `limit` bytes would be produced.
struct Capped<R> {
    inner: R,
    remaining: usize,
    meter: Meter,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.remaining == 0 {
            // One probe byte tells a document of exactly `limit` bytes from a larger one.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => {
                    self.meter.exceeded.set(true);
                    Err(io::Error::other("document exceeds the size cap"))
                }
            };
        }
        let want = buf.len().min(self.remaining);
        let n = self.inner.read(&mut buf[..want])?;
        self.remaining -= n;
        self.meter.read.set(self.meter.read.get() + n as u64);
        Ok(n)
    }
}

/// The decoded stream of one document.
pub(crate) struct Opened<'a> {
    /// The decompressed, capped bytes with any BOM and leading whitespace consumed.
    pub reader: Box<dyn BufRead + 'a>,
    /// The byte counter of `reader`.
    pub meter: Meter,
    /// How many gzip layers were removed.
    pub gzip_layers: u32,
}

const GZIP_MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];
const MAX_GZIP_LAYERS: u32 = 2;

/// Opens `body` for reading: removes up to two gzip layers (real gzip only:
/// a `.gz` name or a gzip content type over plain text is read as plain),
/// caps the output at `max_bytes`, then skips a UTF-8 BOM and leading whitespace.
pub(crate) fn open(body: &[u8], max_bytes: usize) -> io::Result<Opened<'_>> {
    let mut reader: Box<dyn BufRead + '_> = Box::new(body);
    let mut gzip_layers = 0;
    while gzip_layers < MAX_GZIP_LAYERS && starts_with_gzip(&mut reader)? {
        reader = Box::new(BufReader::new(MultiGzDecoder::new(reader)));
        gzip_layers += 1;
    }
    let meter = Meter::default();
    let capped = Capped {
        inner: reader,
        remaining: max_bytes,
        meter: meter.clone(),
    };
    let mut reader: Box<dyn BufRead + '_> = Box::new(BufReader::with_capacity(32 * 1024, capped));
    skip_bom_and_space(&mut reader)?;
    Ok(Opened {
        reader,
        meter,
        gzip_layers,
    })
}

/// Peeks for the gzip magic and deflate method byte without consuming anything.
fn starts_with_gzip(reader: &mut Box<dyn BufRead + '_>) -> io::Result<bool> {
    let head = reader.fill_buf()?;
    Ok(head.len() >= GZIP_MAGIC.len() && head[..GZIP_MAGIC.len()] == GZIP_MAGIC)
}

fn skip_bom_and_space(reader: &mut Box<dyn BufRead + '_>) -> io::Result<()> {
    let mut first = true;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        let mut n = 0;
        if first && buf.starts_with(b"\xEF\xBB\xBF") {
            n = 3;
        }
        first = false;
        n += buf[n..].iter().take_while(|b| b.is_ascii_whitespace()).count();
        let done = n < buf.len();
        reader.consume(n);
        if done {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::Compression;
    use flate2::write::GzEncoder;

    use super::*;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn read_all(body: &[u8], cap: usize) -> (io::Result<Vec<u8>>, Meter, u32) {
        let mut opened = open(body, cap).unwrap();
        let mut out = Vec::new();
        let res = opened.reader.read_to_end(&mut out).map(|_| out);
        (res, opened.meter, opened.gzip_layers)
    }

    #[test]
    fn peels_gzip_layers_and_bom() {
        let body = gz(&gz(b"\xEF\xBB\xBF  \n<urlset/>"));
        let (out, meter, layers) = read_all(&body, 1024);
        assert_eq!(out.unwrap(), b"<urlset/>");
        assert_eq!(layers, 2);
        assert!(!meter.exceeded());
    }

    #[test]
    fn plain_text_with_gzip_name_is_plain() {
        let (out, _, layers) = read_all(b"https://a.example/\n", 1024);
        assert_eq!(out.unwrap(), b"https://a.example/\n");
        assert_eq!(layers, 0);
    }

    #[test]
    fn cap_counts_decompressed_bytes() {
        let body = gz(&vec![b'a'; 10_000]);
        assert!(body.len() < 1000);
        let (out, meter, _) = read_all(&body, 4096);
        assert!(out.is_err());
        assert!(meter.exceeded());
        let (out, meter, _) = read_all(&body, 10_000);
        assert_eq!(out.unwrap().len(), 10_000);
        assert!(!meter.exceeded());
    }
}

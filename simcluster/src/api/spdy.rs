//! SPDY/3.1 framing, the stream protocol `kubectl port-forward` speaks (directly after an
//! `Upgrade: SPDY/3.1`, or tunnelled in WebSocket binary messages): control and data frames,
//! and name/value header blocks compressed with zlib and the protocol's preset dictionary
//! (<https://www.chromium.org/spdy/spdy-protocol/spdy-protocol-draft3/>, §2.2, §2.6, §2.6.10.1).
//! Only what a server of port-forward streams needs is here.

use std::collections::BTreeMap;

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

pub const SYN_STREAM: u16 = 1;
pub const SYN_REPLY: u16 = 2;
pub const PING: u16 = 6;
pub const GOAWAY: u16 = 7;
pub const FLAG_FIN: u8 = 0x01;
const VERSION: u16 = 3;

/// The header names of the dictionary (§2.6.10.1), each length-prefixed in it.
const DICTIONARY_WORDS: &[&str] = &[
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
    "set-cookie",
    "keep-alive",
    "origin",
];

/// The dictionary's tail: common values, not length-prefixed.
const DICTIONARY_TAIL: &str = "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505\
203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized\
403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable\
Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT\
chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,\
text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.";

/// The preset zlib dictionary of SPDY/3 header blocks.
fn dictionary() -> Vec<u8> {
    let mut d = Vec::with_capacity(1423);
    for w in DICTIONARY_WORDS {
        d.extend_from_slice(&u32::try_from(w.len()).unwrap_or(0).to_be_bytes());
        d.extend_from_slice(w.as_bytes());
    }
    d.extend_from_slice(DICTIONARY_TAIL.as_bytes());
    d
}

/// A protocol error: the session cannot go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("SPDY: {0}")]
pub struct SpdyError(pub String);

/// One frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Control { kind: u16, flags: u8, data: Vec<u8> },
    Data { stream: u32, flags: u8, data: Vec<u8> },
}

/// Takes one whole frame off the front of `buf`, if there is one.
pub fn next_frame(buf: &mut Vec<u8>) -> Result<Option<Frame>, SpdyError> {
    let Some(head) = buf.get(..8) else {
        return Ok(None);
    };
    let first = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    let flags = head[4];
    let len = usize::try_from(u32::from_be_bytes([0, head[5], head[6], head[7]])).unwrap_or(usize::MAX);
    if buf.len() < 8 + len {
        return Ok(None);
    }
    let data = buf[8..8 + len].to_vec();
    buf.drain(..8 + len);
    if first & 0x8000_0000 != 0 {
        let version = u16::try_from((first >> 16) & 0x7fff).unwrap_or(0);
        if version != VERSION {
            return Err(SpdyError(format!("unsupported version {version}")));
        }
        let kind = u16::try_from(first & 0xffff).unwrap_or(0);
        Ok(Some(Frame::Control { kind, flags, data }))
    } else {
        Ok(Some(Frame::Data {
            stream: first & 0x7fff_ffff,
            flags,
            data,
        }))
    }
}

fn header(first: u32, flags: u8, len: usize) -> Vec<u8> {
    let mut out = first.to_be_bytes().to_vec();
    let len = u32::try_from(len).unwrap_or(0);
    out.push(flags);
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out
}

pub fn control(kind: u16, flags: u8, data: &[u8]) -> Vec<u8> {
    let mut out = header(
        0x8000_0000 | (u32::from(VERSION) << 16) | u32::from(kind),
        flags,
        data.len(),
    );
    out.extend_from_slice(data);
    out
}

pub fn data(stream: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = header(stream & 0x7fff_ffff, flags, payload.len());
    out.extend_from_slice(payload);
    out
}

/// The stream id at the start of a control frame's data.
pub fn stream_id(data: &[u8]) -> u32 {
    data.get(..4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) & 0x7fff_ffff)
        .unwrap_or(0)
}

/// The two zlib streams of a session's header blocks (one per direction).
pub struct HeaderCodec {
    inflate: Decompress,
    deflate: Compress,
    dictionary: Vec<u8>,
    dictionary_set: bool,
}

impl std::fmt::Debug for HeaderCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HeaderCodec")
    }
}

impl Default for HeaderCodec {
    fn default() -> Self {
        let mut deflate = Compress::new(Compression::default(), true);
        let dictionary = dictionary();
        // The peer's inflater is primed with the same dictionary.
        let _ = deflate.set_dictionary(&dictionary);
        Self {
            inflate: Decompress::new(true),
            deflate,
            dictionary,
            dictionary_set: false,
        }
    }
}

impl HeaderCodec {
    /// Reads a compressed name/value block.
    pub fn decode(&mut self, block: &[u8]) -> Result<BTreeMap<String, String>, SpdyError> {
        let mut out = Vec::new();
        let mut input = block;
        let mut chunk = vec![0u8; 4096];
        loop {
            let before_in = self.inflate.total_in();
            let before_out = self.inflate.total_out();
            let status = self.inflate.decompress(input, &mut chunk, FlushDecompress::Sync);
            let used = usize::try_from(self.inflate.total_in() - before_in).unwrap_or(0);
            let made = usize::try_from(self.inflate.total_out() - before_out).unwrap_or(0);
            out.extend_from_slice(&chunk[..made]);
            input = &input[used.min(input.len())..];
            match status {
                Ok(_) if input.is_empty() && made < chunk.len() => break,
                Ok(Status::Ok | Status::BufError) if used > 0 || made > 0 => {}
                Ok(_) => break,
                Err(e) if e.needs_dictionary().is_some() && !self.dictionary_set => {
                    self.inflate
                        .set_dictionary(&self.dictionary)
                        .map_err(|e| SpdyError(format!("header dictionary: {e}")))?;
                    self.dictionary_set = true;
                }
                Err(e) => return Err(SpdyError(format!("header block: {e}"))),
            }
        }
        parse_block(&out)
    }

    /// Writes a compressed name/value block.
    pub fn encode(&mut self, headers: &[(&str, &str)]) -> Result<Vec<u8>, SpdyError> {
        let mut raw = u32::try_from(headers.len()).unwrap_or(0).to_be_bytes().to_vec();
        for (k, v) in headers {
            for s in [k, v] {
                raw.extend_from_slice(&u32::try_from(s.len()).unwrap_or(0).to_be_bytes());
                raw.extend_from_slice(s.as_bytes());
            }
        }
        let mut out = Vec::with_capacity(raw.len() + 64);
        let mut input = raw.as_slice();
        loop {
            out.reserve(256);
            let before = self.deflate.total_in();
            self.deflate
                .compress_vec(input, &mut out, FlushCompress::Sync)
                .map_err(|e| SpdyError(format!("header block: {e}")))?;
            let used = usize::try_from(self.deflate.total_in() - before).unwrap_or(0);
            input = &input[used.min(input.len())..];
            // A sync flush is complete once the output has room left over.
            if input.is_empty() && out.len() < out.capacity() {
                break;
            }
        }
        Ok(out)
    }
}

fn read_u32(b: &[u8], at: &mut usize) -> Result<u32, SpdyError> {
    let bytes = b
        .get(*at..*at + 4)
        .ok_or_else(|| SpdyError("truncated header block".into()))?;
    *at += 4;
    Ok(u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

fn read_str(b: &[u8], at: &mut usize) -> Result<String, SpdyError> {
    let len = usize::try_from(read_u32(b, at)?).unwrap_or(usize::MAX);
    let s = b
        .get(*at..(*at).saturating_add(len))
        .ok_or_else(|| SpdyError("truncated header block".into()))?;
    *at += len;
    Ok(String::from_utf8_lossy(s).into_owned())
}

fn parse_block(b: &[u8]) -> Result<BTreeMap<String, String>, SpdyError> {
    let mut at = 0;
    let n = read_u32(b, &mut at)?;
    let mut out = BTreeMap::new();
    for _ in 0..n {
        let k = read_str(b, &mut at)?;
        let v = read_str(b, &mut at)?;
        out.insert(k.to_ascii_lowercase(), v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dictionary_is_the_specified_one() {
        let d = dictionary();
        assert_eq!(d.len(), 1423);
        // zlib's DICTID of the SPDY/3 dictionary.
        let (mut a, mut b) = (1u32, 0u32);
        for x in &d {
            a = (a + u32::from(*x)) % 65521;
            b = (b + a) % 65521;
        }
        assert_eq!(format!("{:08x}", (b << 16) | a), "e3c6a7c2");
    }

    #[test]
    fn header_blocks_round_trip_and_frames_split() -> Result<(), SpdyError> {
        let mut client = HeaderCodec::default();
        let mut server = HeaderCodec::default();
        for _ in 0..2 {
            let block = client.encode(&[("streamtype", "data"), ("port", "8080"), ("requestid", "0")])?;
            let h = server.decode(&block)?;
            assert_eq!(h.get("port").map(String::as_str), Some("8080"));
            assert_eq!(h.get("streamtype").map(String::as_str), Some("data"));
        }
        let mut buf = [control(PING, 0, &1u32.to_be_bytes()), data(3, FLAG_FIN, b"hi")].concat();
        assert_eq!(
            next_frame(&mut buf)?,
            Some(Frame::Control {
                kind: PING,
                flags: 0,
                data: 1u32.to_be_bytes().to_vec()
            })
        );
        assert_eq!(
            next_frame(&mut buf)?,
            Some(Frame::Data {
                stream: 3,
                flags: FLAG_FIN,
                data: b"hi".to_vec()
            })
        );
        assert_eq!(next_frame(&mut buf)?, None);
        Ok(())
    }
}

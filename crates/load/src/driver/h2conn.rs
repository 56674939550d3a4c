//! An HTTP/2 client connection written for the engine (RFC 9113), in place
//! of the `h2` crate on the measured path.
//!
//! Why by hand: under callgrind (`bench/callgrind.sh --profile`, rest-h2,
//! one caller) `h2` was 40% of the engine's instructions per call, and
//! memcpy another 12% (78 copies per call, most of them h2 moving frames
//! through its layers); encoding the same request headers anew on every
//! call (HPACK, Huffman-coding `:path`) was 13% alone. A load generator
//! sends one request over and over, so this client encodes the request's
//! header block once per driver, keeps a small stream table, and writes
//! every frame straight into one output buffer that the connection's task
//! writes with one system call. What it does not do: server push (refused
//! in SETTINGS) and priorities (ignored). Response header blocks are
//! decoded by [`super::hpack`].
//!
//! Shape: one task per connection owns the socket. It writes what callers
//! queued, reads, parses frames, decodes header blocks (every block, also
//! for streams nobody waits for, so the HPACK table stays in step), keeps
//! both flow-control windows, and hands each stream's response to the
//! caller that waits for it. Callers run on the same thread (the engine's
//! `LocalSet`), so the shared state is an `Rc<RefCell<_>>`.
//!
//! Request headers use the dynamic table the way a browser or gRPC client
//! would: the connection's first request inserts its fields (literal with
//! incremental indexing), every later one names them by index, so the bytes
//! on the wire after the first call are a few bytes per field. If the
//! server's SETTINGS_HEADER_TABLE_SIZE cannot hold them, every request
//! carries the fields as literals without indexing.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use bytes::{Bytes, BytesMut};
use protobench_model::load::ErrorKind;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::grpc::Deframer;
use super::hpack::HeaderBlock;
use super::net::{Counted, Stream};
use super::{CallError, GrpcStatus};

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PUSH_PROMISE: u8 = 0x5;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const CONTINUATION: u8 = 0x9;

const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;

const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
const SETTINGS_ENABLE_PUSH: u16 = 0x2;
const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

const NO_ERROR: u32 = 0x0;
const PROTOCOL_ERROR: u32 = 0x1;
const CANCEL: u32 = 0x8;

/// The largest frame payload this client accepts (the protocol's default;
/// it does not advertise a larger one, as `h2` does not).
const MAX_FRAME: usize = 16_384;
/// The HPACK table size this client's decoder allows (the default).
const DECODER_TABLE: usize = 4_096;
/// The largest response header block, CONTINUATION frames included.
const MAX_HEADER_BLOCK: usize = 256 * 1024;
/// The largest decoded response header list (1 MiB), counted as RFC 9113
/// counts SETTINGS_MAX_HEADER_LIST_SIZE (name, value and 32 bytes per
/// field). A header block is at most [`MAX_HEADER_BLOCK`], but one byte of
/// it can name a table entry of 4 KB: 256 KiB of such references decode to
/// a gigabyte of fields, each handed to the stream, and a `grpc-message` or
/// `content-type` among them copied each time (when they were also
/// percent-decoded or made strings each time, 2,000 references to one of
/// 4,000 bytes, a 6 KB block, took a debug build 150 ms per response). Past
/// it the stream fails (`other`); the block is still decoded to its end, as
/// the table must follow the server's, but its fields are no longer looked
/// at.
const MAX_HEADER_LIST: usize = 1 << 20;
/// The most CONTINUATION frames one header block may take. A full block
/// ([`MAX_HEADER_BLOCK`]) in the largest frames takes 16; this allows
/// servers that cut blocks into 1 KiB frames. Empty CONTINUATION frames
/// grow no buffer, so [`MAX_HEADER_BLOCK`] never ends a flood of them, and a
/// header block may not be interrupted: without this limit every stream of
/// the connection would wait, and its task spin on frames, until the calls'
/// timeouts. Past it the connection fails as a protocol error (`other`).
const MAX_CONTINUATIONS: usize = 256;
/// The most SETTINGS and PING acknowledgements queued while the server
/// reads none of what this client writes (the number Go's HTTP/2 server
/// allows a client, its `maxQueuedControlFrames`). Each such frame from the
/// server queues an answer; a server that floods them and never reads would
/// grow the output buffer at the rate it writes (a SETTINGS flood: 9 bytes
/// queued per 9 received), until the calls' timeouts. The count restarts
/// each time the buffer is written out whole. Past it the connection fails
/// as a protocol error (`other`).
const MAX_QUEUED_CONTROL: usize = 10_000;
/// The largest stream id a client may use.
const MAX_STREAM_ID: u32 = (1 << 31) - 1;
/// Room for reading: several full frames.
const READ_BUFFER: usize = 64 * 1024;

/// Windows and limits this client asks for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Windows {
    /// Per stream (SETTINGS_INITIAL_WINDOW_SIZE).
    pub(crate) stream: u32,
    /// The whole connection (raised by a WINDOW_UPDATE after the preface).
    pub(crate) connection: u32,
}

/// How requests use the peer's HPACK table on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TableUse {
    /// Nothing inserted yet.
    Unprimed,
    /// The fields are in the table.
    Primed,
    /// No table; `announce`: the next block starts with a size update to 0.
    Off { announce: bool },
}

/// What a stream's response held, for the driver to judge.
#[derive(Debug, Default)]
pub(crate) struct Reply {
    /// `:status` of the final response head.
    pub(crate) status: u16,
    /// `content-type`, when the body is kept.
    pub(crate) content_type: Option<String>,
    /// Whether `content-type` is a gRPC one.
    pub(crate) grpc_type: bool,
    /// `grpc-status` and `grpc-message` in the response head.
    pub(crate) head_grpc: Option<GrpcStatus>,
    /// ... and in the trailers.
    pub(crate) trailer_grpc: Option<GrpcStatus>,
    /// The body, when kept.
    pub(crate) body: Option<BytesMut>,
    /// Body bytes received.
    pub(crate) body_len: usize,
    /// The body split into gRPC messages (gRPC only).
    pub(crate) deframer: Deframer,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Phase {
    /// Waiting for the response head.
    #[default]
    Head,
    /// Reading DATA (and trailers).
    Body,
    /// Finished: the reply or the error is ready.
    Done,
}

/// One open stream.
#[derive(Default)]
struct Slot {
    phase: Phase,
    grpc: bool,
    keep_body: bool,
    reply: Reply,
    error: Option<CallError>,
    waker: Option<Waker>,
    /// Our send window for this stream.
    send_window: i64,
    /// Request body not yet sent (waits for window).
    pending: Bytes,
    /// Received bytes not yet given back with a WINDOW_UPDATE.
    unacked: u32,
    /// The server closed its side (END_STREAM or RST_STREAM).
    remote_closed: bool,
}

/// Stream ids are small odd integers: a multiplication spreads them.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The server's settings that bind this client.
#[derive(Debug, Clone, Copy)]
struct PeerSettings {
    header_table: usize,
    max_concurrent: usize,
    initial_window: i64,
    max_frame: usize,
}

/// A header block arriving in pieces (HEADERS then CONTINUATION).
struct Partial {
    id: u32,
    end_stream: bool,
    block: Vec<u8>,
    /// CONTINUATION frames so far.
    frames: usize,
}

/// The state a connection's task and its callers share.
struct State {
    /// The server's address, for messages.
    peer: String,
    /// Frames waiting to be written.
    out: Vec<u8>,
    /// The connection task, when it waits.
    task: Option<Waker>,
    /// Boxed, so that opening and taking a stream moves a pointer, not a
    /// slot of a few hundred bytes; finished slots wait in `spare` for the
    /// next stream (as many as were ever open at once).
    streams: HashMap<u32, Box<Slot>, BuildHasherDefault<IdHasher>>,
    // Boxes, not slots: a slot goes from here to `streams` and back
    // without being moved.
    #[allow(clippy::vec_box)]
    spare: Vec<Box<Slot>>,
    /// Streams open (not finished, not cancelled).
    active: usize,
    next_id: u32,
    settings: PeerSettings,
    settings_seen: bool,
    /// The caller of `connect`, waiting for the server's SETTINGS.
    connecting: Option<Waker>,
    /// Our connection-level send window.
    send_window: i64,
    /// Connection-level bytes received not yet given back.
    unacked: u32,
    windows: Windows,
    /// Why the connection is gone.
    failed: Option<CallError>,
    /// The server sent GOAWAY: no new streams. Its error code and debug
    /// data, for the message of calls it cuts off.
    goaway: Option<String>,
    /// Handles held by callers; at 0 the connection closes.
    handles: usize,
    /// Callers waiting for a stream (MAX_CONCURRENT_STREAMS reached).
    waiting: Vec<Waker>,
    /// Streams whose request body waits for window.
    blocked: Vec<u32>,
    decoder: super::hpack::Decoder,
    partial: Option<Partial>,
    table: TableUse,
    /// Bytes the request's fields take in the server's table.
    table_need: usize,
    /// SETTINGS and PING acknowledgements queued since `out` was last
    /// written out whole.
    control_queued: usize,
}

/// Why the frames read could not be handled: the connection's end.
struct FrameFail {
    error: CallError,
    /// Whether to tell the server (GOAWAY with PROTOCOL_ERROR) first.
    send_goaway: bool,
}

/// The payload length in the frame header at the start of `head`.
fn frame_len(head: &[u8]) -> usize {
    u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize
}

/// A GOAWAY frame (last stream 0) with `code`.
fn goaway(out: &mut Vec<u8>, code: u32) {
    frame_head(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

fn frame_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, id: u32) {
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&id.to_be_bytes());
}

fn protocol(peer: &str, what: impl std::fmt::Display) -> CallError {
    CallError::new(ErrorKind::Other, format!("HTTP/2 protocol error from {peer}: {what}"))
}

impl State {
    /// A connection's state before the server's SETTINGS: `out` holds what
    /// is to be written first (the preface), `table_need` the bytes the
    /// request's fields take in the server's table.
    fn new(peer: String, out: Vec<u8>, windows: Windows, table_need: usize) -> State {
        State {
            peer,
            out,
            task: None,
            streams: HashMap::default(),
            spare: Vec::new(),
            active: 0,
            next_id: 1,
            settings: PeerSettings {
                header_table: 4_096,
                max_concurrent: usize::MAX,
                initial_window: 65_535,
                max_frame: MAX_FRAME,
            },
            settings_seen: false,
            connecting: None,
            send_window: 65_535,
            unacked: 0,
            windows,
            failed: None,
            goaway: None,
            handles: 1,
            waiting: Vec::new(),
            blocked: Vec::new(),
            decoder: super::hpack::Decoder::new(DECODER_TABLE),
            partial: None,
            table: TableUse::Unprimed,
            table_need,
            control_queued: 0,
        }
    }

    /// Keeps a stream's slot, taken out of `streams` with its reply, for
    /// the next stream, cleared of what else it held.
    fn put_back(&mut self, mut slot: Box<Slot>) {
        debug_assert!(
            slot.reply.body.is_none() && slot.reply.status == 0,
            "the reply was taken"
        );
        slot.error = None;
        slot.waker = None;
        slot.pending = Bytes::new();
        self.spare.push(slot);
    }

    fn wake_task(&mut self) {
        if let Some(w) = self.task.take() {
            w.wake();
        }
    }

    fn wake_waiting(&mut self) {
        for w in self.waiting.drain(..) {
            w.wake();
        }
    }

    fn usable(&self) -> bool {
        self.failed.is_none() && self.goaway.is_none() && self.next_id < MAX_STREAM_ID - 2
    }

    /// Ends the connection: every stream fails with `err`.
    fn fail(&mut self, err: CallError) {
        if self.failed.is_some() {
            return;
        }
        for slot in self.streams.values_mut() {
            if slot.phase != Phase::Done {
                slot.phase = Phase::Done;
                slot.error = Some(err.clone());
                if let Some(w) = slot.waker.take() {
                    w.wake();
                }
            }
        }
        self.active = 0;
        self.failed = Some(err);
        self.wake_waiting();
        if let Some(w) = self.connecting.take() {
            w.wake();
        }
    }

    /// Marks a stream finished (reply or `error`) and wakes its caller.
    fn finish(&mut self, id: u32, error: Option<CallError>) {
        let Some(slot) = self.streams.get_mut(&id) else { return };
        if slot.phase == Phase::Done {
            return;
        }
        slot.phase = Phase::Done;
        slot.error = error;
        if let Some(w) = slot.waker.take() {
            w.wake();
        }
        if !slot.pending.is_empty() || !slot.remote_closed {
            // Our side is still open (body not all sent) or the server's:
            // close the stream.
            slot.pending = Bytes::new();
            self.rst(id, CANCEL);
        }
        self.active -= 1;
        self.wake_waiting();
    }

    fn rst(&mut self, id: u32, code: u32) {
        frame_head(&mut self.out, 4, RST_STREAM, 0, id);
        self.out.extend_from_slice(&code.to_be_bytes());
        self.wake_task();
    }

    fn window_update(&mut self, id: u32, n: u32) {
        frame_head(&mut self.out, 4, WINDOW_UPDATE, 0, id);
        self.out.extend_from_slice(&n.to_be_bytes());
    }

    /// Opens a stream for one request; the caller then waits on the id.
    fn open(&mut self, block: &HeaderBlock, body: &Bytes, grpc: bool, keep_body: bool) -> u32 {
        let id = self.next_id;
        self.next_id += 2;
        let end = body.is_empty();
        let fields: &[u8] = match self.table {
            TableUse::Unprimed => {
                self.table = TableUse::Primed;
                &block.first
            }
            TableUse::Primed => &block.steady,
            TableUse::Off { announce: true } => {
                self.table = TableUse::Off { announce: false };
                &block.plain_reset
            }
            TableUse::Off { announce: false } => &block.plain,
        };
        // HEADERS, then CONTINUATION frames if the block is larger than a frame.
        let max = self.settings.max_frame;
        let mut chunks = fields.chunks(max).peekable();
        let mut kind = HEADERS;
        loop {
            let chunk = chunks.next().unwrap_or(&[]);
            let last = chunks.peek().is_none();
            let mut flags = if last { END_HEADERS } else { 0 };
            if kind == HEADERS && end {
                flags |= END_STREAM;
            }
            frame_head(&mut self.out, chunk.len(), kind, flags, id);
            self.out.extend_from_slice(chunk);
            kind = CONTINUATION;
            if last {
                break;
            }
        }
        // A spare's reply was taken (left at its default) and its error and
        // waker cleared when it was put back; the rest is set here.
        let mut slot = self.spare.pop().unwrap_or_default();
        slot.phase = Phase::Head;
        slot.grpc = grpc;
        slot.keep_body = keep_body;
        slot.send_window = self.settings.initial_window;
        slot.pending = body.clone();
        slot.unacked = 0;
        slot.remote_closed = false;
        self.streams.insert(id, slot);
        self.active += 1;
        if !end {
            self.pump(id);
        }
        self.wake_task();
        id
    }

    /// Sends as much of a stream's request body as the windows allow.
    fn pump(&mut self, id: u32) {
        let Some(slot) = self.streams.get_mut(&id) else { return };
        while !slot.pending.is_empty() {
            let room = self
                .send_window
                .min(slot.send_window)
                .min(self.settings.max_frame as i64);
            if room <= 0 {
                if !self.blocked.contains(&id) {
                    self.blocked.push(id);
                }
                return;
            }
            let n = (room as usize).min(slot.pending.len());
            let chunk = slot.pending.split_to(n);
            let flags = if slot.pending.is_empty() { END_STREAM } else { 0 };
            frame_head(&mut self.out, n, DATA, flags, id);
            self.out.extend_from_slice(&chunk);
            self.send_window -= n as i64;
            slot.send_window -= n as i64;
        }
    }

    fn pump_blocked(&mut self) {
        for id in std::mem::take(&mut self.blocked) {
            self.pump(id);
        }
    }

    /// Handles the complete frames at the start of `buf` (what was read and
    /// not yet handled); returns the bytes they took: a frame cut short
    /// waits for the next read.
    fn read_frames(&mut self, buf: &[u8]) -> Result<usize, FrameFail> {
        let mut pos = 0;
        while buf.len() - pos >= 9 {
            let h = &buf[pos..pos + 9];
            let len = frame_len(h);
            let (kind, flags) = (h[3], h[4]);
            let id = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & MAX_STREAM_ID;
            if !self.settings_seen && (kind != SETTINGS || flags & ACK != 0) {
                let error = not_http2(&self.peer, &buf[pos..]);
                return Err(FrameFail {
                    error,
                    send_goaway: false,
                });
            }
            if len > MAX_FRAME {
                let error = protocol(&self.peer, format_args!("a frame of {len} bytes (at most {MAX_FRAME})"));
                return Err(FrameFail {
                    error,
                    send_goaway: false,
                });
            }
            if buf.len() - pos < 9 + len {
                break;
            }
            self.on_frame(kind, flags, id, &buf[pos + 9..pos + 9 + len])
                .map_err(|error| FrameFail {
                    error,
                    send_goaway: true,
                })?;
            pos += 9 + len;
        }
        Ok(pos)
    }

    /// Handles one frame; an error is the connection's end.
    fn on_frame(&mut self, kind: u8, flags: u8, id: u32, payload: &[u8]) -> Result<(), CallError> {
        if let Some(p) = &self.partial
            && (kind != CONTINUATION || id != p.id)
        {
            return Err(protocol(&self.peer, "a header block was interrupted by another frame"));
        }
        match kind {
            DATA => self.on_data(flags, id, payload),
            HEADERS => {
                let mut p = payload;
                if flags & PADDED != 0 {
                    p = unpad(&self.peer, p)?;
                }
                if flags & PRIORITY != 0 {
                    p = p
                        .get(5..)
                        .ok_or_else(|| protocol(&self.peer, "HEADERS too short for its priority"))?;
                }
                let end_stream = flags & END_STREAM != 0;
                if flags & END_HEADERS != 0 {
                    self.on_header_block(id, end_stream, p)
                } else {
                    self.partial = Some(Partial {
                        id,
                        end_stream,
                        block: p.to_vec(),
                        frames: 0,
                    });
                    Ok(())
                }
            }
            CONTINUATION => {
                let Some(mut p) = self.partial.take() else {
                    return Err(protocol(&self.peer, "CONTINUATION without a header block"));
                };
                p.block.extend_from_slice(payload);
                if p.block.len() > MAX_HEADER_BLOCK {
                    return Err(protocol(&self.peer, "response header block over 256 KiB"));
                }
                p.frames += 1;
                if p.frames > MAX_CONTINUATIONS {
                    return Err(protocol(
                        &self.peer,
                        format_args!("more than {MAX_CONTINUATIONS} CONTINUATION frames in one header block"),
                    ));
                }
                if flags & END_HEADERS != 0 {
                    self.on_header_block(p.id, p.end_stream, &p.block)
                } else {
                    self.partial = Some(p);
                    Ok(())
                }
            }
            RST_STREAM => {
                let code = u32_at(payload).ok_or_else(|| protocol(&self.peer, "RST_STREAM of wrong size"))?;
                if let Some(slot) = self.streams.get_mut(&id) {
                    slot.remote_closed = true;
                    slot.pending = Bytes::new();
                    self.finish(
                        id,
                        Some(CallError::new(
                            ErrorKind::Reset,
                            format!("the server reset the stream (RST_STREAM, error code {code:#x})"),
                        )),
                    );
                }
                Ok(())
            }
            SETTINGS => self.on_settings(flags, payload),
            PUSH_PROMISE => Err(protocol(&self.peer, "PUSH_PROMISE, though push is disabled")),
            PING => {
                if flags & ACK == 0 && payload.len() == 8 {
                    self.queue_control()?;
                    frame_head(&mut self.out, 8, PING, ACK, 0);
                    self.out.extend_from_slice(payload);
                }
                Ok(())
            }
            GOAWAY => {
                let last = u32_at(payload).ok_or_else(|| protocol(&self.peer, "GOAWAY too short"))? & MAX_STREAM_ID;
                let code = u32_at(payload.get(4..).unwrap_or(&[])).unwrap_or(0);
                let debug = String::from_utf8_lossy(payload.get(8..).unwrap_or(&[]));
                let debug: String = debug.chars().take(200).collect();
                let reason = if debug.is_empty() {
                    format!("GOAWAY, error code {code:#x}, last stream {last}")
                } else {
                    format!("GOAWAY, error code {code:#x}, last stream {last}: {debug:?}")
                };
                self.goaway = Some(reason.clone());
                let refused: Vec<u32> = self.streams.keys().copied().filter(|&s| s > last).collect();
                for s in refused {
                    if let Some(slot) = self.streams.get_mut(&s) {
                        slot.remote_closed = true;
                    }
                    self.finish(
                        s,
                        Some(CallError::new(
                            ErrorKind::Reset,
                            format!("the server refused the stream ({reason})"),
                        )),
                    );
                }
                self.wake_waiting();
                Ok(())
            }
            WINDOW_UPDATE => {
                let inc =
                    u32_at(payload).ok_or_else(|| protocol(&self.peer, "WINDOW_UPDATE of wrong size"))? & MAX_STREAM_ID;
                if id == 0 {
                    self.send_window += inc as i64;
                } else if let Some(slot) = self.streams.get_mut(&id) {
                    slot.send_window += inc as i64;
                }
                self.pump_blocked();
                Ok(())
            }
            _ => Ok(()), // PRIORITY and unknown types are ignored.
        }
    }

    fn on_settings(&mut self, flags: u8, payload: &[u8]) -> Result<(), CallError> {
        if flags & ACK != 0 {
            return Ok(());
        }
        if !payload.len().is_multiple_of(6) {
            return Err(protocol(&self.peer, "SETTINGS of wrong size"));
        }
        for s in payload.chunks_exact(6) {
            let key = u16::from_be_bytes([s[0], s[1]]);
            let value = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
            match key {
                SETTINGS_HEADER_TABLE_SIZE => {
                    self.settings.header_table = value as usize;
                }
                SETTINGS_MAX_CONCURRENT_STREAMS => self.settings.max_concurrent = value as usize,
                SETTINGS_INITIAL_WINDOW_SIZE => {
                    if value > MAX_STREAM_ID {
                        return Err(protocol(&self.peer, "SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1"));
                    }
                    let delta = value as i64 - self.settings.initial_window;
                    self.settings.initial_window = value as i64;
                    for slot in self.streams.values_mut() {
                        slot.send_window += delta;
                    }
                }
                SETTINGS_MAX_FRAME_SIZE => {
                    if !(16_384..=16_777_215).contains(&value) {
                        return Err(protocol(&self.peer, "SETTINGS_MAX_FRAME_SIZE out of range"));
                    }
                    self.settings.max_frame = value as usize;
                }
                _ => {}
            }
        }
        self.queue_control()?;
        frame_head(&mut self.out, 0, SETTINGS, ACK, 0);
        if !self.settings_seen {
            self.settings_seen = true;
            if let Some(w) = self.connecting.take() {
                w.wake();
            }
        }
        // Requests' fields go into the table only if it holds them all.
        if self.table != (TableUse::Off { announce: false }) && self.settings.header_table < self.table_need {
            self.table = TableUse::Off { announce: true };
        }
        self.pump_blocked();
        self.wake_waiting();
        Ok(())
    }

    /// Counts an acknowledgement about to be queued, within [`MAX_QUEUED_CONTROL`].
    fn queue_control(&mut self) -> Result<(), CallError> {
        self.control_queued += 1;
        if self.control_queued > MAX_QUEUED_CONTROL {
            return Err(protocol(
                &self.peer,
                format_args!(
                    "a flood of SETTINGS or PING frames: over {MAX_QUEUED_CONTROL} acknowledgements queued that the server does not read"
                ),
            ));
        }
        Ok(())
    }

    fn on_data(&mut self, flags: u8, id: u32, payload: &[u8]) -> Result<(), CallError> {
        // Flow control counts the whole payload, padding included.
        let n = payload.len() as u32;
        self.unacked += n;
        if self.unacked >= self.windows.connection / 2 {
            let u = std::mem::take(&mut self.unacked);
            self.window_update(0, u);
        }
        let data = if flags & PADDED != 0 {
            unpad(&self.peer, payload)?
        } else {
            payload
        };
        let end = flags & END_STREAM != 0;
        let half = self.windows.stream / 2;
        let Some(slot) = self.streams.get_mut(&id) else {
            return Ok(()); // a stream we cancelled
        };
        if slot.phase != Phase::Body {
            if slot.phase == Phase::Head {
                let err = CallError::new(ErrorKind::Other, "DATA before the response head");
                slot.remote_closed = end;
                self.finish(id, Some(err));
            }
            return Ok(());
        }
        let r = &mut slot.reply;
        r.body_len += data.len();
        let mut error = None;
        if slot.grpc {
            r.deframer.feed(data);
            // Only a 200 carries gRPC messages: another status's body (a
            // 404 page, say) is judged by its status, not read as prefixes.
            if r.status == 200
                && let Some(len) = r.deframer.oversized
            {
                error = Some(CallError::new(
                    ErrorKind::WrongResponse,
                    format!(
                        "gRPC message of {len} bytes announced: over the 16 MiB the engine accepts (MAX_GRPC_MESSAGE)"
                    ),
                ));
            }
        }
        if error.is_none()
            && let Some(body) = r.body.as_mut()
        {
            // Within MAX_KEPT_BODY: past it a body asked for fails the call,
            // one kept for an error status is dropped.
            let len = body.len() + data.len();
            if len <= super::MAX_KEPT_BODY {
                body.extend_from_slice(data);
            } else if slot.keep_body {
                error = Some(super::body_too_large(len, false));
            } else {
                r.body = None;
            }
        }
        if error.is_some() {
            slot.remote_closed |= end;
            self.finish(id, error);
            return Ok(());
        }
        if end {
            slot.remote_closed = true;
            self.finish(id, None);
        } else {
            slot.unacked += n;
            if slot.unacked >= half {
                let u = std::mem::take(&mut slot.unacked);
                self.window_update(id, u);
            }
        }
        Ok(())
    }

    /// A complete header block: decoded always (the table must follow the
    /// server's), applied when someone waits for the stream.
    fn on_header_block(&mut self, id: u32, end_stream: bool, block: &[u8]) -> Result<(), CallError> {
        let State {
            decoder, streams, peer, ..
        } = self;
        let mut slot = streams.get_mut(&id);
        let head = slot.as_ref().is_some_and(|s| s.phase == Phase::Head);
        let mut status = None;
        let mut code: Option<Option<u32>> = None;
        // The last `grpc-message` and `content-type` values, as bytes: made
        // strings once, after the block, however often a server repeats them.
        let mut message: Option<Vec<u8>> = None;
        let mut content_type: Option<Vec<u8>> = None;
        let mut grpc_type = false;
        let mut list = 0usize;
        decoder
            .decode(block, wanted, |name, value| {
                list = list.saturating_add(name.len() + value.len() + 32);
                if list > MAX_HEADER_LIST {
                    return;
                }
                let Some(s) = slot.as_mut() else { return };
                match name {
                    b":status" if head => {
                        status = std::str::from_utf8(value).ok().and_then(|v| v.parse::<u16>().ok());
                    }
                    b"content-type" if head => {
                        grpc_type = super::grpc::is_grpc_content_type(value);
                        // Read (a copy) only where it may be kept, below.
                        if s.keep_body || status != Some(200) || (s.grpc && !grpc_type) {
                            let c = content_type.get_or_insert_with(Vec::new);
                            c.clear();
                            c.extend_from_slice(value);
                        }
                    }
                    b"grpc-status" if s.grpc => {
                        code = Some(std::str::from_utf8(value).ok().and_then(|v| v.trim().parse().ok()));
                    }
                    b"grpc-message" if s.grpc => {
                        let m = message.get_or_insert_with(Vec::new);
                        m.clear();
                        m.extend_from_slice(value);
                    }
                    _ => {}
                }
            })
            .map_err(|e| protocol(peer, format_args!("response headers could not be decoded (HPACK: {e})")))?;
        let Some(slot) = slot else { return Ok(()) };
        if list > MAX_HEADER_LIST {
            slot.remote_closed |= end_stream;
            let e = format!("response header list over {MAX_HEADER_LIST} bytes (MAX_HEADER_LIST)");
            self.finish(id, Some(CallError::new(ErrorKind::Other, e)));
            return Ok(());
        }
        let grpc = match code {
            Some(Some(code)) => Some(GrpcStatus {
                code,
                message: message.map(|m| super::grpc::percent_decode(&m)).unwrap_or_default(),
            }),
            // grpc-status present but not a number: counted as absent, as before.
            _ => None,
        };
        let error = match slot.phase {
            Phase::Head => match status {
                None => Some("response without :status"),
                // Informational: the final head follows.
                Some(100..=199) if !end_stream => return Ok(()),
                Some(status) => {
                    let r = &mut slot.reply;
                    r.status = status;
                    r.grpc_type = grpc_type;
                    r.head_grpc = grpc;
                    // The body and content type are kept when asked for, on
                    // an error status, and for a gRPC call answered by
                    // something that is not gRPC.
                    let not_grpc = slot.grpc && (status != 200 || !(r.head_grpc.is_some() || grpc_type));
                    if slot.keep_body || not_grpc || !(200..300).contains(&status) {
                        r.body = Some(BytesMut::new());
                        r.content_type = content_type.map(|c| String::from_utf8_lossy(&c).into_owned());
                    }
                    slot.phase = Phase::Body;
                    None
                }
            },
            Phase::Body if !end_stream => Some("trailers without END_STREAM"),
            Phase::Body => {
                slot.reply.trailer_grpc = grpc;
                None
            }
            Phase::Done => return Ok(()),
        };
        slot.remote_closed |= end_stream;
        if let Some(e) = error {
            self.finish(id, Some(CallError::new(ErrorKind::Other, e)));
        } else if end_stream {
            self.finish(id, None);
        }
        Ok(())
    }
}

/// The response fields a reply is made of; the others are not decoded
/// unless the HPACK table needs them.
fn wanted(name: &[u8]) -> bool {
    matches!(name, b":status" | b"content-type" | b"grpc-status" | b"grpc-message")
}

fn u32_at(p: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(p.get(..4)?.try_into().ok()?))
}

/// The payload of a PADDED frame without its pad length and padding.
fn unpad<'a>(peer: &str, p: &'a [u8]) -> Result<&'a [u8], CallError> {
    let pad = *p
        .first()
        .ok_or_else(|| protocol(peer, "padded frame without a pad length"))? as usize;
    if pad + 1 > p.len() {
        return Err(protocol(peer, "padding longer than the frame"));
    }
    Ok(&p[1..p.len() - pad])
}

/// A caller's handle on a connection; the last one dropped closes it.
pub(crate) struct Handle {
    shared: Rc<RefCell<State>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        let mut st = self.shared.borrow_mut();
        st.handles -= 1;
        if st.handles == 0 {
            st.wake_task();
        }
    }
}

impl Handle {
    /// Another handle on the same connection.
    pub(crate) fn share(&self) -> Handle {
        self.shared.borrow_mut().handles += 1;
        Handle {
            shared: self.shared.clone(),
        }
    }

    /// Whether a new stream can be opened (no failure, no GOAWAY, ids left).
    pub(crate) fn is_usable(&self) -> bool {
        self.shared.borrow().usable()
    }

    /// Opens a connection over `io`: the preface and SETTINGS, then waits
    /// for the server's SETTINGS (a server that does not speak HTTP/2 fails
    /// here, not on the first call).
    pub(crate) async fn connect(
        io: Counted<Stream>,
        peer: String,
        windows: Windows,
        block: &HeaderBlock,
    ) -> Result<Handle, CallError> {
        let mut out = Vec::with_capacity(16 * 1024);
        out.extend_from_slice(PREFACE);
        frame_head(&mut out, 12, SETTINGS, 0, 0);
        out.extend_from_slice(&SETTINGS_ENABLE_PUSH.to_be_bytes());
        out.extend_from_slice(&0u32.to_be_bytes());
        out.extend_from_slice(&SETTINGS_INITIAL_WINDOW_SIZE.to_be_bytes());
        out.extend_from_slice(&windows.stream.to_be_bytes());
        if windows.connection > 65_535 {
            frame_head(&mut out, 4, WINDOW_UPDATE, 0, 0);
            out.extend_from_slice(&(windows.connection - 65_535).to_be_bytes());
        }
        let shared = Rc::new(RefCell::new(State::new(peer, out, windows, block.table_bytes)));
        tokio::task::spawn_local(drive(io, shared.clone()));
        let handle = Handle { shared };
        std::future::poll_fn(|cx| {
            let mut st = handle.shared.borrow_mut();
            if let Some(e) = &st.failed {
                let mut err = CallError::new(ErrorKind::Connect, e.message.clone());
                err.cause = e.cause;
                return Poll::Ready(Err(err));
            }
            if st.settings_seen {
                return Poll::Ready(Ok(()));
            }
            st.connecting = Some(cx.waker().clone());
            Poll::Pending
        })
        .await?;
        Ok(handle)
    }

    /// One request on a new stream, and its reply once the stream ends.
    pub(crate) async fn request(
        &self,
        block: &HeaderBlock,
        body: &Bytes,
        grpc: bool,
        keep_body: bool,
    ) -> Result<Reply, CallError> {
        let id = std::future::poll_fn(|cx| {
            let mut st = self.shared.borrow_mut();
            if let Some(e) = &st.failed {
                return Poll::Ready(Err(e.clone()));
            }
            if !st.usable() {
                return Poll::Ready(Err(CallError::new(
                    ErrorKind::Reset,
                    "the connection takes no new streams (GOAWAY or stream ids used up)",
                )));
            }
            if st.active >= st.settings.max_concurrent {
                st.waiting.push(cx.waker().clone());
                return Poll::Pending;
            }
            Poll::Ready(Ok(st.open(block, body, grpc, keep_body)))
        })
        .await?;
        let guard = Open {
            shared: &self.shared,
            id,
        };
        let result = std::future::poll_fn(|cx| {
            let mut st = self.shared.borrow_mut();
            let slot = st
                .streams
                .get_mut(&id)
                .expect("the stream's slot lives until its caller takes it");
            if slot.phase != Phase::Done {
                slot.waker = Some(cx.waker().clone());
                return Poll::Pending;
            }
            let mut slot = st.streams.remove(&id).expect("present");
            let reply = std::mem::take(&mut slot.reply);
            let result = match slot.error.take() {
                Some(e) => Err(e),
                None => Ok(reply),
            };
            st.put_back(slot);
            Poll::Ready(result)
        })
        .await;
        std::mem::forget(guard);
        result
    }
}

/// A stream whose caller may go away (a call timeout drops the future):
/// then the stream is reset and its slot freed.
struct Open<'a> {
    shared: &'a Rc<RefCell<State>>,
    id: u32,
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        let mut st = self.shared.borrow_mut();
        if let Some(slot) = st.streams.get(&self.id)
            && slot.phase != Phase::Done
        {
            st.finish(self.id, Some(CallError::new(ErrorKind::Other, "cancelled")));
        }
        if let Some(mut slot) = st.streams.remove(&self.id) {
            slot.reply = Reply::default();
            st.put_back(slot);
        }
        st.blocked.retain(|&b| b != self.id);
    }
}

/// The connection's task: writes what callers queue, reads and handles
/// frames, until the connection fails or its last handle is dropped.
async fn drive(mut io: Counted<Stream>, shared: Rc<RefCell<State>>) {
    let mut buf = vec![0u8; READ_BUFFER].into_boxed_slice();
    let mut filled = 0;
    let mut unflushed = false;
    // Under TLS: bytes left of the frame (or the preface) at the front of
    // `out` that a write cut short.
    let mut partial = PREFACE.len();
    let tls = matches!(io.inner, Stream::Tls(_));
    std::future::poll_fn(|cx| {
        let mut w = Writing {
            tls,
            unflushed: &mut unflushed,
            partial: &mut partial,
        };
        poll_drive(cx, &mut io, &shared, &mut buf, &mut filled, &mut w)
    })
    .await;
}

/// The connection task's write state.
struct Writing<'a> {
    tls: bool,
    /// A write went out that no flush has completed yet.
    unflushed: &'a mut bool,
    /// See [`drive`].
    partial: &'a mut usize,
}

/// The largest plaintext of one TLS record.
const TLS_RECORD: usize = 16_384;

/// How much of `out` one TLS write takes: the rest of a frame a write cut
/// short, alone, or whole frames up to one record's plaintext (at least
/// one frame). rustls turns each write into records of its own, so no frame
/// header is split across two records. Apache Tomcat 10.1 (java-spring)
/// misreads a frame header split so ("The payload is [16448] bytes long
/// but the maximum frame size is [16384]", then GOAWAY), where the same
/// bytes in other records or in clear text are fine.
fn tls_chunk(out: &[u8], partial: usize) -> usize {
    if partial > 0 {
        return partial.min(out.len());
    }
    let mut end = 0;
    while end + 9 <= out.len() {
        let next = end + 9 + frame_len(&out[end..]);
        if next > out.len() || (end > 0 && next > TLS_RECORD) {
            break;
        }
        end = next;
    }
    if end == 0 { out.len() } else { end }
}

/// What is left of the frame at `n` once `n` bytes of `out` (a frame
/// boundary at `partial`) are written.
fn left_after(out: &[u8], partial: usize, n: usize) -> usize {
    let mut boundary = partial;
    while boundary < n {
        boundary += 9 + frame_len(&out[boundary..]);
    }
    boundary - n
}

fn poll_drive(
    cx: &mut Context<'_>,
    io: &mut Counted<Stream>,
    shared: &Rc<RefCell<State>>,
    buf: &mut [u8],
    filled: &mut usize,
    w: &mut Writing<'_>,
) -> Poll<()> {
    let mut st = shared.borrow_mut();
    loop {
        if st.failed.is_some() {
            return Poll::Ready(());
        }
        if st.handles == 0 && st.active == 0 {
            // Nobody can use the connection any more: say so, and close.
            goaway(&mut st.out, NO_ERROR);
            let out = std::mem::take(&mut st.out);
            let _ = Pin::new(&mut *io).poll_write(cx, &out);
            let _ = Pin::new(&mut *io).poll_flush(cx);
            st.fail(CallError::new(ErrorKind::Reset, "connection closed"));
            return Poll::Ready(());
        }
        while !st.out.is_empty() {
            let len = if w.tls {
                tls_chunk(&st.out, *w.partial)
            } else {
                st.out.len()
            };
            match Pin::new(&mut *io).poll_write(cx, &st.out[..len]) {
                Poll::Ready(Ok(0)) => {
                    st.fail(CallError::new(ErrorKind::Reset, "the connection accepts no more bytes"));
                    return Poll::Ready(());
                }
                Poll::Ready(Ok(n)) => {
                    if w.tls {
                        *w.partial = left_after(&st.out, *w.partial, n);
                    }
                    st.out.drain(..n);
                    *w.unflushed = true;
                }
                Poll::Ready(Err(e)) => {
                    st.fail(CallError::io("writing to the server", &e));
                    return Poll::Ready(());
                }
                Poll::Pending => break,
            }
        }
        if st.out.is_empty() {
            st.control_queued = 0;
        }
        // TLS keeps records that the socket did not take until a flush
        // completes (clear text: a no-op).
        if *w.unflushed {
            match Pin::new(&mut *io).poll_flush(cx) {
                Poll::Ready(Ok(())) => *w.unflushed = false,
                Poll::Ready(Err(e)) => {
                    st.fail(CallError::io("writing to the server", &e));
                    return Poll::Ready(());
                }
                Poll::Pending => {}
            }
        }
        let mut rb = ReadBuf::new(&mut buf[*filled..]);
        match Pin::new(&mut *io).poll_read(cx, &mut rb) {
            Poll::Ready(Ok(())) => {
                let n = rb.filled().len();
                if n == 0 {
                    let e = match &st.goaway {
                        Some(why) => format!("{} closed the connection after {why}", st.peer),
                        None => format!("{} closed the connection", st.peer),
                    };
                    let e = CallError::new(ErrorKind::Reset, e);
                    st.fail(e);
                    return Poll::Ready(());
                }
                *filled += n;
                let pos = match st.read_frames(&buf[..*filled]) {
                    Ok(pos) => pos,
                    Err(FrameFail { error, send_goaway }) => {
                        if send_goaway {
                            goaway(&mut st.out, PROTOCOL_ERROR);
                            let out = std::mem::take(&mut st.out);
                            let _ = Pin::new(&mut *io).poll_write(cx, &out);
                        }
                        st.fail(error);
                        return Poll::Ready(());
                    }
                };
                buf.copy_within(pos..*filled, 0);
                *filled -= pos;
            }
            Poll::Ready(Err(e)) => {
                st.fail(CallError::io("reading from the server", &e));
                return Poll::Ready(());
            }
            Poll::Pending => {
                // Whatever is left in `out` waits for the socket, which wakes
                // this task as a new request from a caller does.
                st.task = Some(cx.waker().clone());
                return Poll::Pending;
            }
        }
    }
}

/// The error for a server whose first bytes are not a SETTINGS frame.
fn not_http2(peer: &str, first: &[u8]) -> CallError {
    let shown: String = String::from_utf8_lossy(&first[..first.len().min(40)])
        .chars()
        .map(|c| if c.is_control() { '.' } else { c })
        .collect();
    CallError::new(
        ErrorKind::Connect,
        format!("{peer} did not answer with HTTP/2 (expected a SETTINGS frame first, got {shown:?})"),
    )
    .because(super::ConnectCause::NotHttp2)
}

/// For the fuzz target `h2_frames` (issue 35): `data` read as a server's
/// bytes, `read` bytes at a time, by a connection whose caller opens three
/// streams once the server's SETTINGS came (plain; gRPC with a body; gRPC
/// keeping its body) and a new one for each that ends. Each finished
/// stream's reply goes to `reply` with whether the call was gRPC (the fuzz
/// target hands it to the driver's `http2::response`). Returns the error
/// that ended the connection, if one did.
pub(crate) fn fuzz_read(data: &[u8], read: usize, mut on_reply: impl FnMut(bool, Reply)) -> Option<CallError> {
    let block = HeaderBlock::new(&[
        (b":method", b"POST"),
        (b":scheme", b"http"),
        (b":authority", b"fuzz"),
        (b":path", b"/fuzz"),
    ]);
    let windows = Windows {
        stream: 65_535,
        connection: 1 << 20,
    };
    let calls = [
        (Bytes::new(), false, false),
        (Bytes::from_static(b"\0\0\0\0\x02{}"), true, false),
        (Bytes::new(), true, true),
    ];
    let mut st = State::new("fuzz".into(), Vec::new(), windows, block.table_bytes);
    let mut kinds: HashMap<u32, usize> = HashMap::new();
    let mut buf = Vec::new();
    for chunk in data.chunks(read.max(1)) {
        buf.extend_from_slice(chunk);
        let pos = match st.read_frames(&buf) {
            Ok(pos) => pos,
            Err(fail) => {
                st.fail(fail.error.clone());
                return Some(fail.error);
            }
        };
        buf.drain(..pos);
        // What the connection would write is not what is fuzzed.
        st.out.clear();
        let done: Vec<u32> = st
            .streams
            .iter()
            .filter(|(_, slot)| slot.phase == Phase::Done)
            .map(|(id, _)| *id)
            .collect();
        for id in done {
            let mut slot = st.streams.remove(&id).expect("listed above");
            let reply = std::mem::take(&mut slot.reply);
            let kind = kinds.remove(&id).expect("every stream was opened here");
            if slot.error.take().is_none() {
                on_reply(calls[kind].1, reply);
            }
            st.put_back(slot);
        }
        if st.settings_seen && st.usable() {
            for (kind, (body, grpc, keep)) in calls.iter().enumerate() {
                if kinds.values().all(|&k| k != kind) && st.active < st.settings.max_concurrent {
                    let id = st.open(&block, body, *grpc, *keep);
                    kinds.insert(id, kind);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::future::Future;
    use std::net::SocketAddr;
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;
    use crate::driver::ByteCounters;
    use crate::driver::net::Endpoint;

    /// Runs `f` on a current-thread runtime inside a `LocalSet`, as the
    /// engine does, within 20 s.
    fn run<F: Future<Output = ()>>(f: F) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            tokio::time::timeout(Duration::from_secs(20), f)
                .await
                .expect("test within 20 s");
        });
    }

    const BIG: Windows = Windows {
        stream: 8 << 20,
        connection: 64 << 20,
    };

    async fn open(addr: SocketAddr, windows: Windows, block: &HeaderBlock) -> Result<Handle, CallError> {
        let endpoint = Endpoint::new(addr, addr.to_string(), None, &[]).unwrap();
        let io = endpoint.connect(&Rc::new(ByteCounters::default())).await?;
        Handle::connect(io, addr.to_string(), windows, block).await
    }

    #[test]
    fn tls_writes_end_on_frame_boundaries_within_a_record() {
        let mut out = Vec::new();
        out.extend_from_slice(PREFACE);
        let mut sizes = vec![PREFACE.len()];
        for len in [6, 0, 20, 16_384, 16_384, 4, 4] {
            let start = out.len();
            frame_head(&mut out, len, DATA, 0, 1);
            out.resize(out.len() + len, 0xab);
            sizes.push(out.len() - start);
        }
        // The preface alone, then three small frames, then each large frame
        // alone (over a record), then the two small ones.
        let mut chunks = Vec::new();
        let (mut at, mut partial) = (0, PREFACE.len());
        while at < out.len() {
            let n = tls_chunk(&out[at..], partial);
            partial = left_after(&out[at..], partial, n);
            assert_eq!(partial, 0, "whole writes leave no partial frame");
            chunks.push(n);
            at += n;
        }
        assert_eq!(
            chunks,
            [
                24,
                sizes[1] + sizes[2] + sizes[3],
                sizes[4],
                sizes[5],
                sizes[6] + sizes[7]
            ]
        );
        // A write cut short inside the large frame: the rest of it goes alone.
        let from = 24 + sizes[1] + sizes[2] + sizes[3];
        let cut = 100;
        let left = left_after(&out[from..], 0, cut);
        assert_eq!(left, sizes[4] - cut);
        assert_eq!(tls_chunk(&out[from + cut..], left), left);
        // Cut inside a small frame after whole ones.
        assert_eq!(left_after(&out[24..], 0, sizes[1] + 3), sizes[2] - 3);
    }

    /// An `h2` server on loopback that answers every stream with the
    /// request's body (an empty one: with the request's path and `x-case`),
    /// a header of `head_bytes` bytes, and trailers `grpc-status: 7`.
    async fn echo_server(window: u32, max_streams: u32, head_bytes: usize, most: Rc<Cell<usize>>) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::task::spawn_local(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let mut conn = h2::server::Builder::new()
                .initial_window_size(window)
                .max_concurrent_streams(max_streams)
                .handshake::<_, Bytes>(tcp)
                .await
                .unwrap();
            let open = Rc::new(Cell::new(0usize));
            while let Some(Ok((req, mut respond))) = conn.accept().await {
                let (open, most) = (open.clone(), most.clone());
                open.set(open.get() + 1);
                most.set(most.get().max(open.get()));
                tokio::task::spawn_local(async move {
                    let (parts, mut body) = req.into_parts();
                    let mut got = Vec::new();
                    while let Some(chunk) = body.data().await {
                        let chunk = chunk.unwrap();
                        let _ = body.flow_control().release_capacity(chunk.len());
                        got.extend_from_slice(&chunk);
                    }
                    if got.is_empty() {
                        let case = parts.headers["x-case"].to_str().unwrap();
                        got = format!("{} {case}", parts.uri.path_and_query().unwrap()).into_bytes();
                    }
                    let response = http::Response::builder()
                        .header("x-big", "b".repeat(head_bytes))
                        .body(())
                        .unwrap();
                    let mut send = respond.send_response(response, false).unwrap();
                    send.send_data(Bytes::from(got), false).unwrap();
                    let mut trailers = http::HeaderMap::new();
                    trailers.insert("grpc-status", "7".parse().unwrap());
                    trailers.insert("grpc-message", "no%20way".parse().unwrap());
                    send.send_trailers(trailers).unwrap();
                    open.set(open.get() - 1);
                });
            }
        });
        addr
    }

    #[test]
    fn bodies_larger_than_every_window_go_both_ways_within_the_stream_limit() {
        run(async {
            let most = Rc::new(Cell::new(0));
            // The server's window is 1,000 bytes and it takes 2 streams at a
            // time; ours is 65,535 (the protocol's least), so 200 kB each
            // way needs WINDOW_UPDATEs from both sides.
            let addr = echo_server(1_000, 2, 10, most.clone()).await;
            let small = Windows {
                stream: 65_535,
                connection: 65_535,
            };
            let block = HeaderBlock::sample("/echo?n=1");
            let conn = open(addr, small, &block).await.unwrap();
            let mut body: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
            // One gRPC message (the call is read as gRPC: a length prefix
            // made of the pattern would be over MAX_GRPC_MESSAGE).
            body[0] = 0;
            body[1..5].copy_from_slice(&(200_000u32 - 5).to_be_bytes());
            let body = Bytes::from(body);
            let calls = (0..6).map(|_| {
                let c = conn.share();
                let (block, body) = (&block, body.clone());
                async move { c.request(block, &body, true, true).await }
            });
            for reply in futures_join_all(calls).await {
                let reply = reply.unwrap();
                assert_eq!(reply.status, 200);
                assert_eq!(reply.body_len, 200_000);
                assert_eq!(reply.body.as_deref(), Some(&body[..]));
                assert_eq!(
                    reply.trailer_grpc,
                    Some(GrpcStatus {
                        code: 7,
                        message: "no way".into()
                    })
                );
            }
            assert_eq!(most.get(), 2, "the server never had more than its 2 streams open");
            assert!(conn.is_usable());
        });
    }

    /// Polls every future to its end, in order of completion (the engine's
    /// callers are tasks; here they share the test's task).
    async fn futures_join_all<F: Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
        let mut futures: Vec<_> = futures.map(Box::pin).collect();
        let mut out: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
        std::future::poll_fn(|cx| {
            let mut pending = false;
            for (f, o) in futures.iter_mut().zip(out.iter_mut()) {
                if o.is_none() {
                    match f.as_mut().poll(cx) {
                        Poll::Ready(v) => *o = Some(v),
                        Poll::Pending => pending = true,
                    }
                }
            }
            if pending { Poll::Pending } else { Poll::Ready(()) }
        })
        .await;
        out.into_iter().map(|o| o.expect("done")).collect()
    }

    #[test]
    fn a_head_over_several_frames_and_the_request_fields_arrive_whole() {
        run(async {
            // 40 kB of header: HEADERS and CONTINUATION frames (16 kB each).
            let addr = echo_server(65_535, 100, 40_000, Rc::new(Cell::new(0))).await;
            let block = HeaderBlock::sample("/v1/tasks?id=3");
            let conn = open(addr, BIG, &block).await.unwrap();
            for _ in 0..3 {
                let reply = conn
                    .request(&block, &Bytes::from_static(b"x"), false, false)
                    .await
                    .unwrap();
                assert_eq!(reply.status, 200);
                assert_eq!(reply.body_len, 1);
                assert!(reply.body.is_none(), "not kept unless asked");
            }
            let st = conn.shared.borrow();
            assert_eq!(st.table, TableUse::Primed);
        });
        // The server saw the path and the custom header on every call, the
        // first by literal and the later ones by index.
        run(async {
            let addr = echo_server(65_535, 100, 0, Rc::new(Cell::new(0))).await;
            let block = HeaderBlock::sample("/v1/tasks?id=3");
            let conn = open(addr, BIG, &block).await.unwrap();
            for _ in 0..3 {
                let reply = conn.request(&block, &Bytes::new(), false, true).await.unwrap();
                assert_eq!(reply.body.as_deref(), Some(&b"/v1/tasks?id=3 caller-7"[..]));
            }
        });
    }

    /// A server written frame by frame: it sends SETTINGS, then runs
    /// `script` on the connection (the client's preface already read).
    async fn raw_server<F, Fut>(script: F) -> SocketAddr
    where
        F: FnOnce(TcpStream) -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::task::spawn_local(async move {
            let (mut tcp, _) = listener.accept().await.unwrap();
            let mut preface = [0u8; 24];
            tcp.read_exact(&mut preface).await.unwrap();
            assert_eq!(&preface[..], PREFACE);
            tcp.write_all(&frame(SETTINGS, 0, 0, &[])).await.unwrap();
            script(tcp).await;
        });
        addr
    }

    fn frame(kind: u8, flags: u8, id: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        frame_head(&mut out, payload.len(), kind, flags, id);
        out.extend_from_slice(payload);
        out
    }

    async fn read_frame(tcp: &mut TcpStream) -> Option<(u8, u8, u32, Vec<u8>)> {
        let mut head = [0u8; 9];
        tcp.read_exact(&mut head).await.ok()?;
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let mut payload = vec![0; len];
        tcp.read_exact(&mut payload).await.ok()?;
        Some((
            head[3],
            head[4],
            u32::from_be_bytes(head[5..9].try_into().unwrap()),
            payload,
        ))
    }

    /// Reads frames until one of `kind` (on `id`, if given).
    async fn wait_for(tcp: &mut TcpStream, kind: u8, id: Option<u32>) -> Option<(u8, u32, Vec<u8>)> {
        loop {
            let (k, flags, i, payload) = read_frame(tcp).await?;
            if k == kind && id.is_none_or(|id| id == i) {
                return Some((flags, i, payload));
            }
        }
    }

    #[test]
    fn padding_an_informational_head_and_a_ping_are_handled() {
        run(async {
            let pong = Rc::new(RefCell::new(None));
            let seen = pong.clone();
            let addr = raw_server(move |mut tcp| async move {
                wait_for(&mut tcp, HEADERS, Some(1)).await.unwrap();
                let mut out = frame(PING, 0, 0, b"12345678");
                // :status 100 (a literal: not in the static table).
                out.extend(frame(HEADERS, END_HEADERS, 1, &[0x08, 0x03, b'1', b'0', b'0']));
                // :status 200, padded by 3 bytes.
                out.extend(frame(HEADERS, END_HEADERS | PADDED, 1, &[3, 0x88, 0, 0, 0]));
                out.extend(frame(DATA, PADDED, 1, &[2, b'h', b'e', 0, 0]));
                out.extend(frame(DATA, END_STREAM, 1, b"llo"));
                tcp.write_all(&out).await.unwrap();
                let (flags, _, payload) = wait_for(&mut tcp, PING, None).await.unwrap();
                *seen.borrow_mut() = Some((flags, payload));
                // Hold the connection until the client closes it.
                while read_frame(&mut tcp).await.is_some() {}
            })
            .await;
            let block = HeaderBlock::sample("/");
            let conn = open(addr, BIG, &block).await.unwrap();
            let reply = conn.request(&block, &Bytes::new(), false, true).await.unwrap();
            assert_eq!(reply.status, 200);
            assert_eq!(reply.body.as_deref(), Some(&b"hello"[..]));
            for _ in 0..100 {
                if pong.borrow().is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            assert_eq!(*pong.borrow(), Some((ACK, b"12345678".to_vec())));
        });
    }

    #[test]
    fn a_cancelled_call_resets_its_stream_and_the_last_handle_closes_the_connection() {
        run(async {
            let log = Rc::new(RefCell::new(Vec::new()));
            let seen = log.clone();
            let addr = raw_server(move |mut tcp| async move {
                wait_for(&mut tcp, HEADERS, Some(1)).await.unwrap();
                let (_, id, code) = wait_for(&mut tcp, RST_STREAM, None).await.unwrap();
                seen.borrow_mut().push(format!("rst {id} {}", u32_at(&code).unwrap()));
                wait_for(&mut tcp, HEADERS, Some(3)).await.unwrap();
                tcp.write_all(&frame(HEADERS, END_HEADERS | END_STREAM, 3, &[0x88]))
                    .await
                    .unwrap();
                let (_, _, goaway) = wait_for(&mut tcp, GOAWAY, None).await.unwrap();
                seen.borrow_mut()
                    .push(format!("goaway {}", u32_at(&goaway[4..]).unwrap()));
                let mut rest = Vec::new();
                tcp.read_to_end(&mut rest).await.unwrap();
                seen.borrow_mut().push(format!("closed after {} bytes", rest.len()));
            })
            .await;
            let block = HeaderBlock::sample("/");
            let conn = open(addr, BIG, &block).await.unwrap();
            let first = tokio::time::timeout(
                Duration::from_millis(100),
                conn.request(&block, &Bytes::new(), false, false),
            )
            .await;
            assert!(first.is_err(), "the server never answers stream 1");
            let reply = conn.request(&block, &Bytes::new(), false, false).await.unwrap();
            assert_eq!(reply.status, 200);
            assert_eq!(conn.shared.borrow().active, 0);
            drop(conn);
            for _ in 0..200 {
                if log.borrow().len() == 3 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            assert_eq!(*log.borrow(), ["rst 1 8", "goaway 0", "closed after 0 bytes"]);
        });
    }

    #[test]
    fn goaway_and_a_closed_connection_fail_the_calls_they_cut_off() {
        run(async {
            let addr = raw_server(|mut tcp| async move {
                wait_for(&mut tcp, HEADERS, Some(1)).await.unwrap();
                let mut goaway = 0u32.to_be_bytes().to_vec();
                goaway.extend_from_slice(&0u32.to_be_bytes());
                tcp.write_all(&frame(GOAWAY, 0, 0, &goaway)).await.unwrap();
                while read_frame(&mut tcp).await.is_some() {}
            })
            .await;
            let block = HeaderBlock::sample("/");
            let conn = open(addr, BIG, &block).await.unwrap();
            let err = conn.request(&block, &Bytes::new(), false, false).await.unwrap_err();
            assert_eq!(err.kind, ErrorKind::Reset);
            assert!(err.message.contains("GOAWAY"), "{}", err.message);
            assert!(!conn.is_usable());
            let again = conn.request(&block, &Bytes::new(), false, false).await.unwrap_err();
            assert_eq!(again.kind, ErrorKind::Reset);

            let addr = raw_server(|mut tcp| async move {
                wait_for(&mut tcp, HEADERS, Some(1)).await.unwrap();
                drop(tcp);
            })
            .await;
            let conn = open(addr, BIG, &block).await.unwrap();
            let err = conn.request(&block, &Bytes::new(), false, false).await.unwrap_err();
            assert_eq!(err.kind, ErrorKind::Reset, "{}", err.message);
            assert!(!conn.is_usable());
        });
    }

    #[test]
    fn a_server_that_does_not_speak_http2_fails_the_connect_by_name() {
        run(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            tokio::task::spawn_local(async move {
                let (mut tcp, _) = listener.accept().await.unwrap();
                let mut buf = [0u8; 24];
                let _ = tcp.read_exact(&mut buf).await;
                let _ = tcp
                    .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                    .await;
            });
            let err = open(addr, BIG, &HeaderBlock::sample("/"))
                .await
                .err()
                .expect("no HTTP/2");
            assert_eq!(err.kind, ErrorKind::Connect);
            assert!(err.message.contains("did not answer with HTTP/2"), "{}", err.message);
            assert!(err.message.contains("HTTP/1.1 400"), "{}", err.message);
        });
    }

    #[test]
    fn a_server_table_too_small_for_the_fields_gets_literals() {
        run(async {
            let addr = raw_server(|mut tcp| async move {
                // SETTINGS_HEADER_TABLE_SIZE = 16: no field fits.
                let mut s = SETTINGS_HEADER_TABLE_SIZE.to_be_bytes().to_vec();
                s.extend_from_slice(&16u32.to_be_bytes());
                tcp.write_all(&frame(SETTINGS, 0, 0, &s)).await.unwrap();
                let mut decoder = loona_hpack::Decoder::new();
                decoder.set_max_allowed_table_size(16);
                for id in [1, 3] {
                    let (_, _, block) = wait_for(&mut tcp, HEADERS, Some(id)).await.unwrap();
                    let got = decoder.decode(&block).unwrap();
                    assert!(got.iter().any(|(n, v)| n == b"x-case" && v == b"caller-7"));
                    tcp.write_all(&frame(HEADERS, END_HEADERS | END_STREAM, id, &[0x88]))
                        .await
                        .unwrap();
                }
                while read_frame(&mut tcp).await.is_some() {}
            })
            .await;
            let block = HeaderBlock::sample("/");
            let conn = open(addr, BIG, &block).await.unwrap();
            // The connect returned after the empty SETTINGS; the second one
            // arrives before or with the first reply.
            for _ in 0..2 {
                let reply = conn.request(&block, &Bytes::new(), false, false).await.unwrap();
                assert_eq!(reply.status, 200);
            }
            assert_eq!(conn.shared.borrow().table, TableUse::Off { announce: false });
        });
    }
}

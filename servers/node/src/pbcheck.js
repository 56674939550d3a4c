// Strict protobuf wire-format check run before protobufjs decodes a gRPC
// request. protobufjs is lenient in ways the contract's "undecodable message
// -> INVALID_ARGUMENT" rule does not allow: in Node it silently truncates a
// length-delimited string that runs past the end of the buffer, reads a known
// field with the wrong wire type as if it had the right one, and replaces
// invalid UTF-8 in `string` fields with U+FFFD. This walks the message once
// (nested messages recursively; string contents are checked with Node's
// native buffer.isUtf8, bytes payloads are skipped) and throws on any of that.
import { isUtf8 } from 'node:buffer';

const WIRE_OF_KIND = {
  int32: 0, uint32: 0, int64: 0, uint64: 0, bool: 0, enum: 0,
  double: 1, float: 5, string: 2, bytes: 2, message: 2,
};

export class WireError extends Error {}

function varint(buf, st) {
  let value = 0;
  let mul = 1;
  for (let i = 0; i < 10; i++) {
    if (st.pos >= st.end) throw new WireError('truncated varint');
    const b = buf[st.pos++];
    if (i < 8) value += (b & 0x7f) * mul; // exact up to 2^56; tags and lengths only
    mul *= 128;
    if ((b & 0x80) === 0) return value;
  }
  throw new WireError('varint longer than 10 bytes');
}

function check(info, buf, start, end, depth) {
  if (depth > 100) throw new WireError('nesting too deep');
  const st = { pos: start, end };
  const byNumber = info.byNumber;
  while (st.pos < end) {
    const tag = varint(buf, st);
    if (tag > 0xffffffff) throw new WireError('invalid tag');
    const number = Math.floor(tag / 8);
    const wire = tag % 8;
    if (number === 0) throw new WireError('field number 0');
    let len = 0;
    switch (wire) {
      case 0: varint(buf, st); break;
      case 1: len = 8; break;
      case 5: len = 4; break;
      case 2: len = varint(buf, st); break;
      default: throw new WireError(`invalid wire type ${wire}`);
    }
    if (len > end - st.pos) throw new WireError('field runs past the end of the message');
    const f = byNumber.get(number);
    if (f) {
      const expected = WIRE_OF_KIND[f.kind];
      const packed = wire === 2 && f.repeated && expected !== 2;
      if (wire !== expected && !packed) throw new WireError(`field ${f.name}: wire type ${wire}, expected ${expected}`);
      if (packed && expected === 1 && len % 8 !== 0) throw new WireError(`field ${f.name}: bad packed length`);
      if (packed && expected === 5 && len % 4 !== 0) throw new WireError(`field ${f.name}: bad packed length`);
      if (packed && expected === 0) {
        const sub = { pos: st.pos, end: st.pos + len };
        while (sub.pos < sub.end) varint(buf, sub);
      }
      if (f.kind === 'string' && !isUtf8(buf.subarray(st.pos, st.pos + len))) throw new WireError(`field ${f.name}: invalid UTF-8`);
      if (f.kind === 'message') check(f.message, buf, st.pos, st.pos + len, depth + 1);
    }
    st.pos += len;
  }
}

export function addWireIndex(model) {
  for (const info of model.messages.values()) {
    info.byNumber = new Map(info.fields.map((f) => [f.number, f]));
  }
}

// Throws an Error describing the first problem; returns nothing when valid.
export function checkWire(info, buf) {
  check(info, buf, 0, buf.length, 0);
}

// proto3 JSON mapping (contract/README.md "JSON (REST)").
//
// Decoding: a strict parser from an already JSON.parse'd value to the native
// object of a message: unknown members, wrong types and out-of-range values
// are errors (-> 400); `null` means "unset" (the field's default); both the
// lowerCamelCase JSON name and the original proto name are accepted, as every
// proto3 JSON parser does.
//
// Encoding: fastify's fast-json-stringify with a response schema derived from
// the same model (see jsonSchema below), so every non-optional field is
// emitted, also at its default.
import { invalid } from './errors.js';
import { defaultFor } from './model.js';

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;
const UINT32_MAX = 4294967295;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;
const UINT64_MAX = (1n << 64n) - 1n;
// The smallest magnitude a float32 cannot hold: halfway between the largest
// float32 and 2**128 (round-to-nearest-even sends it to infinity). Below it,
// e.g. 3.4028235e38 (the largest float32's shortest form), is in range.
const FLOAT32_OVERFLOW = 2 ** 128 - 2 ** 103;
const INT_STRING = /^-?\d+$/;
const NUM_STRING = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/;
const BASE64 = /^(?:[A-Za-z0-9+/]*|[A-Za-z0-9_-]*)={0,2}$/;

const typeName = (v) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

function int32(v, where, min, max) {
  let n;
  if (typeof v === 'number') n = v;
  else if (typeof v === 'string' && INT_STRING.test(v)) n = Number(v);
  else throw invalid(`${where}: expected an integer, got ${typeName(v)}`);
  if (!Number.isInteger(n) || n < min || n > max) throw invalid(`${where}: ${v} is not an integer in ${min}..${max}`);
  return n;
}

function int64(v, where, min, max) {
  let b;
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) throw invalid(`${where}: 64-bit integer number not exactly representable (send it as a string)`);
    b = BigInt(v);
  } else if (typeof v === 'string' && INT_STRING.test(v)) {
    b = BigInt(v);
  } else {
    throw invalid(`${where}: expected a 64-bit integer (string or number), got ${typeName(v)}`);
  }
  if (b < min || b > max) throw invalid(`${where}: ${v} out of range`);
  return b.toString();
}

function float(v, where, f32) {
  let n;
  if (typeof v === 'number') n = v;
  else if (typeof v === 'string' && NUM_STRING.test(v)) n = Number(v);
  else throw invalid(`${where}: expected a finite number, got ${typeName(v) === 'string' ? JSON.stringify(v.slice(0, 20)) : typeName(v)}`);
  if (!Number.isFinite(n) || (f32 && Math.abs(n) >= FLOAT32_OVERFLOW)) throw invalid(`${where}: number out of range`);
  return n;
}

function scalar(f, v, where) {
  switch (f.kind) {
    case 'int32': return int32(v, where, INT32_MIN, INT32_MAX);
    case 'uint32': return int32(v, where, 0, UINT32_MAX);
    case 'int64': return int64(v, where, INT64_MIN, INT64_MAX);
    case 'uint64': return int64(v, where, 0n, UINT64_MAX);
    case 'double': return float(v, where, false);
    case 'float': return float(v, where, true);
    case 'bool':
      if (typeof v !== 'boolean') throw invalid(`${where}: expected true or false, got ${typeName(v)}`);
      return v;
    case 'string':
      if (typeof v !== 'string') throw invalid(`${where}: expected a string, got ${typeName(v)}`);
      return v;
    case 'bytes': {
      if (typeof v !== 'string' || !BASE64.test(v) || v.replace(/=+$/, '').length % 4 === 1) {
        throw invalid(`${where}: expected base64 bytes`);
      }
      return Buffer.from(v, 'base64');
    }
    case 'enum': {
      if (typeof v === 'string') {
        if (!Object.prototype.hasOwnProperty.call(f.enumValues, v)) throw invalid(`${where}: unknown enum value ${JSON.stringify(v.slice(0, 64))}`);
        return v;
      }
      if (typeof v === 'number') {
        const n = int32(v, where, INT32_MIN, INT32_MAX);
        return f.enumNames[n] ?? n; // open enum: unknown numbers are kept
      }
      throw invalid(`${where}: expected an enum name, got ${typeName(v)}`);
    }
    case 'message':
      return decodeMessage(f.message, v, where);
    default:
      throw new Error(`unhandled kind ${f.kind}`);
  }
}

// Decode a JSON value (already parsed) into the native object of `info`.
export function decodeMessage(info, obj, where = '') {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    throw invalid(`${where || 'body'}: expected a JSON object, got ${typeName(obj)}`);
  }
  const fields = info.fields;
  const values = new Array(fields.length);
  const seen = new Array(fields.length).fill(false);
  for (const key of Object.keys(obj)) {
    const f = info.byName.get(key);
    if (f === undefined) throw invalid(`${where ? where + '.' : ''}${key.slice(0, 64)}: unknown field of ${info.fullName}`);
    const i = f.index;
    if (seen[i]) throw invalid(`${where ? where + '.' : ''}${f.name}: field given twice`);
    seen[i] = true;
    values[i] = obj[key];
  }
  const out = {};
  let oneofSet = null;
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i];
    const v = values[i];
    const path = where ? `${where}.${f.name}` : f.name;
    if (v === undefined || v === null) {
      // unset: the default; a singular message field (no proto3 `optional`)
      // is materialized as the empty message, since the contract's OpenAPI and
      // XSD forms require it to be present
      if (!f.presence) out[f.name] = f.kind === 'message' && !f.repeated ? decodeMessage(f.message, {}, path) : defaultFor(f);
      continue;
    }
    if (f.repeated) {
      if (!Array.isArray(v)) throw invalid(`${path}: expected an array, got ${typeName(v)}`);
      const arr = new Array(v.length);
      for (let j = 0; j < v.length; j++) {
        if (v[j] === null) throw invalid(`${path}[${j}]: null element`);
        arr[j] = scalar(f, v[j], `${path}[${j}]`);
      }
      out[f.name] = arr;
      continue;
    }
    if (f.oneof) {
      if (oneofSet && oneofSet.has(f.oneof)) throw invalid(`${path}: more than one member of oneof ${f.oneof} set`);
      (oneofSet ??= new Set()).add(f.oneof);
    }
    out[f.name] = scalar(f, v, path);
  }
  return out;
}

// JSON schema of a message's canonical JSON form, for fast-json-stringify.
// Types without a bytes field need no preparation; bytes fields are turned
// into base64 strings per request by prepareForJson.
export function jsonSchema(info, seen = new Map()) {
  if (seen.has(info.fullName)) return seen.get(info.fullName);
  const properties = {};
  const schema = { type: 'object', properties, additionalProperties: false };
  seen.set(info.fullName, schema);
  for (const f of info.fields) {
    let s;
    switch (f.kind) {
      case 'int32': case 'uint32': s = { type: 'integer' }; break;
      case 'int64': case 'uint64': s = { type: 'string' }; break;
      case 'double': case 'float': s = { type: 'number' }; break;
      case 'bool': s = { type: 'boolean' }; break;
      case 'string': case 'bytes': s = { type: 'string' }; break;
      case 'enum': s = { type: ['string', 'integer'] }; break;
      case 'message': s = jsonSchema(f.message, seen); break;
      default: throw new Error(f.kind);
    }
    properties[f.name] = f.repeated ? { type: 'array', items: s } : s;
  }
  return schema;
}

export function hasBytes(info, seen = new Set()) {
  if (seen.has(info)) return false;
  seen.add(info);
  return info.fields.some((f) => f.kind === 'bytes' || (f.kind === 'message' && hasBytes(f.message, seen)));
}

// Returns a function that copies a native object with bytes fields encoded as
// standard base64 (with padding), or null when the type has no bytes field.
const b64 = (b) => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength)).toString('base64');

export function bytesToBase64(info) {
  if (!hasBytes(info)) return null;
  const conv = (mi, obj) => {
    if (obj === null || obj === undefined) return obj;
    const out = {};
    for (const f of mi.fields) {
      const v = obj[f.name];
      if (v === undefined) continue;
      if (f.kind === 'bytes') out[f.name] = f.repeated ? v.map(b64) : b64(v);
      else if (f.kind === 'message' && hasBytes(f.message)) out[f.name] = f.repeated ? v.map((m) => conv(f.message, m)) : conv(f.message, v);
      else out[f.name] = v;
    }
    return out;
  };
  return (obj) => conv(info, obj);
}

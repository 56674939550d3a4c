// Message model derived at start-up from the contract's .proto files (loaded
// in place from ../../contract/proto with protobufjs reflection). Every
// protocol works on the same native objects: plain JS objects keyed by the
// fields' lowerCamelCase JSON names (what @grpc/proto-loader produces with
// keepCase=false), int64 as decimal strings, enums as their names, bytes as
// Buffers, fields in field-number order.
import protobuf from 'protobufjs';
import path from 'node:path';
import { protoDir } from './config.js';

export const PROTO_FILES = ['protobench/v1/protobench.proto', 'protobench/v1/stream.proto', 'helloworld/helloworld.proto'];

// protoc's ToJsonName: drop '_' and upper-case the following character.
export function jsonName(name) {
  let out = '';
  let up = false;
  for (const ch of name) {
    if (ch === '_') { up = true; continue; }
    out += up ? ch.toUpperCase() : ch;
    up = false;
  }
  return out;
}

const INT32_TYPES = new Set(['int32', 'sint32', 'sfixed32']);
const UINT32_TYPES = new Set(['uint32', 'fixed32']);
const INT64_TYPES = new Set(['int64', 'sint64', 'sfixed64']);
const UINT64_TYPES = new Set(['uint64', 'fixed64']);

function kindOf(field) {
  const t = field.type;
  if (INT32_TYPES.has(t)) return 'int32';
  if (UINT32_TYPES.has(t)) return 'uint32';
  if (INT64_TYPES.has(t)) return 'int64';
  if (UINT64_TYPES.has(t)) return 'uint64';
  if (t === 'double' || t === 'float' || t === 'bool' || t === 'string' || t === 'bytes') return t;
  if (field.resolvedType instanceof protobuf.Enum) return 'enum';
  if (field.resolvedType instanceof protobuf.Type) return 'message';
  throw new Error(`unsupported field type ${t} of ${field.fullName}`);
}

export function loadModel() {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => path.join(protoDir, target);
  root.loadSync(PROTO_FILES, { keepCase: true });
  root.resolveAll();

  const messages = new Map(); // full name (no leading dot) -> MessageInfo
  const infoOf = (type) => {
    const full = type.fullName.replace(/^\./, '');
    let info = messages.get(full);
    if (info) return info;
    info = { name: type.name, fullName: full, fields: [], byName: new Map(), oneofs: [] };
    messages.set(full, info);
    const sorted = [...type.fieldsArray].sort((a, b) => a.id - b.id);
    for (const f of sorted) {
      const jn = jsonName(f.name);
      if (jn !== protobuf.util.camelCase(f.name)) {
        throw new Error(`field ${f.fullName}: JSON name ${jn} differs from protobufjs camelCase`);
      }
      const kind = kindOf(f);
      const fi = {
        index: info.fields.length,
        name: jn, // native object key == JSON name == XML element name
        protoName: f.name,
        number: f.id,
        kind,
        float32: f.type === 'float',
        repeated: f.repeated,
        // proto3 `optional` and oneof members have presence: omitted when unset
        presence: !!f.partOf,
        oneof: f.partOf && !(f.options && f.options.proto3_optional) ? f.partOf.name : null,
        enumValues: kind === 'enum' ? f.resolvedType.values : null,
        enumNames: kind === 'enum' ? f.resolvedType.valuesById : null,
        enumZero: kind === 'enum' ? f.resolvedType.valuesById[0] : null,
        message: null,
      };
      info.fields.push(fi);
      info.byName.set(jn, fi);
      if (f.name !== jn) info.byName.set(f.name, fi);
      if (kind === 'message') fi.message = infoOf(f.resolvedType);
    }
    for (const f of info.fields) if (f.oneof && !info.oneofs.includes(f.oneof)) info.oneofs.push(f.oneof);
    return info;
  };
  const visit = (ns) => {
    for (const nested of ns.nestedArray) {
      if (nested instanceof protobuf.Type) infoOf(nested);
      if (nested.nestedArray) visit(nested);
    }
  };
  visit(root);
  return { root, messages, get: (full) => {
    const m = messages.get(full);
    if (!m) throw new Error(`unknown message ${full}`);
    return m;
  } };
}

export function defaultFor(f) {
  if (f.repeated) return [];
  switch (f.kind) {
    case 'int32': case 'uint32': case 'double': case 'float': return 0;
    case 'int64': case 'uint64': return '0';
    case 'bool': return false;
    case 'string': return '';
    case 'bytes': return Buffer.alloc(0);
    case 'enum': return f.enumZero;
    default: return null; // message fields have presence: left unset
  }
}

'use strict';
// Support shared by the example connectors: the contract's protos, logging
// the worker understands, gRPC errors, a small config-definition helper and
// the Connect data model as protobuf objects.

const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

// The contract is loaded at run time from the repository's proto/ directory.
const PROTO_ROOT = path.resolve(__dirname, '..', '..', '..', 'proto');

function loadProtos() {
  const def = protoLoader.loadSync(
    [
      'sluice/plugin/v1/plugin.proto',
      'sluice/plugin/v1/worker.proto',
      'goplugin/grpc_controller.proto',
      'grpchealth/health.proto',
    ],
    {
      includeDirs: [PROTO_ROOT],
      keepCase: true, // field names exactly as in the .proto files
      longs: Number, // offsets and sequence numbers stay far below 2^53 here
      enums: String,
      defaults: true,
      arrays: true,
      objects: true,
      oneofs: true, // a virtual field names the member of each oneof that is set
    },
  );
  return grpc.loadPackageDefinition(def);
}

// ---------------------------------------------------------------- logging

// Levels as hclog names them; SLUICE_LOG_LEVEL picks the lowest printed.
const LEVELS = ['trace', 'debug', 'info', 'warn', 'error'];
const minLevel = Math.max(0, LEVELS.indexOf((process.env.SLUICE_LOG_LEVEL || 'info').toLowerCase()));

// go-plugin parses JSON lines on stderr, but only with a 6-digit fraction in
// @timestamp (toISOString has 3): pad it, or the line degrades to DEBUG text.
function timestamp() {
  return new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

function log(level, message, fields = {}) {
  if (LEVELS.indexOf(level) < minLevel) return;
  const line = { '@level': level, '@message': message, '@module': 'sluice-node-example', '@timestamp': timestamp(), ...fields };
  process.stderr.write(JSON.stringify(line) + '\n');
}

// ---------------------------------------------------------------- errors

// grpcError builds the status the contract prescribes: INVALID_ARGUMENT for
// bad configuration or data, ABORTED for retriable, UNIMPLEMENTED for
// unsupported, anything else fatal. A trace travels in the binary
// "sluice-trace-bin" trailer (grpc base64-encodes it, so newlines are fine).
function grpcError(code, message, trace) {
  const metadata = new grpc.Metadata();
  if (trace) metadata.set('sluice-trace-bin', Buffer.from(trace, 'utf8'));
  return { code, details: message, metadata };
}

// handler wraps an (async) implementation into a grpc-js unary handler:
// thrown errors become fatal statuses carrying their stack, unless they are
// already statuses (objects with a numeric code).
function handler(name, fn) {
  return (call, callback) => {
    Promise.resolve()
      .then(() => fn(call.request, call))
      .then((resp) => callback(null, resp || {}))
      .catch((err) => {
        if (err && typeof err.code === 'number') return callback(err);
        log('error', `${name} failed`, { error: String(err && err.message ? err.message : err) });
        callback(grpcError(grpc.status.UNKNOWN, `${name}: ${err && err.message ? err.message : err}`, err && err.stack));
      });
  };
}

// ---------------------------------------------------------------- config

// ConfigDef is a tiny ConfigDef: keys with a type, an optional default and a
// check, giving the Describe declaration and the Validate answer.
class ConfigDef {
  constructor(keys) {
    this.keys = keys;
  }

  proto() {
    return {
      keys: this.keys.map((k) => {
        const key = {
          name: k.name,
          type: k.type,
          required: k.default === undefined,
          importance: k.importance || 'IMPORTANCE_MEDIUM',
          documentation: k.doc || '',
          validator: k.validatorDoc || '',
        };
        if (k.default !== undefined) key.default_value = k.default;
        return key;
      }),
    };
  }

  // validate returns one ConfigValue per key.
  validate(config) {
    return this.keys.map((k) => {
      const given = Object.prototype.hasOwnProperty.call(config, k.name);
      const value = given ? config[k.name] : k.default;
      const errors = [];
      if (value === undefined) {
        errors.push(`Missing required configuration "${k.name}" which has no default value.`);
      } else if ((k.type === 'CONFIG_TYPE_LONG' || k.type === 'CONFIG_TYPE_INT') && !/^-?\d+$/.test(value.trim())) {
        errors.push(`Invalid value ${value} for configuration ${k.name}: Not a number of type ${k.type === 'CONFIG_TYPE_LONG' ? 'LONG' : 'INT'}`);
      } else if (k.check) {
        const problem = k.check(value);
        if (problem) errors.push(`Invalid value ${value} for configuration ${k.name}: ${problem}`);
      }
      const cv = { name: k.name, errors, visible: true, recommended_values: [] };
      if (value !== undefined) cv.value = value;
      return cv;
    });
  }

  // parse returns the values with defaults applied, or throws INVALID_ARGUMENT.
  parse(config) {
    const problems = this.validate(config).flatMap((v) => v.errors);
    if (problems.length) throw grpcError(grpc.status.INVALID_ARGUMENT, problems.join('; '));
    const out = {};
    for (const k of this.keys) {
      const v = Object.prototype.hasOwnProperty.call(config, k.name) ? config[k.name] : k.default;
      out[k.name] = k.type === 'CONFIG_TYPE_LONG' || k.type === 'CONFIG_TYPE_INT' ? Number(v) : v;
    }
    return out;
  }
}

// ---------------------------------------------------------------- data

// toJS turns a protobuf Value into a plain JavaScript value (structs become
// objects keyed by the schema's field names).
function toJS(value, schema) {
  if (!value || !value.kind) return null;
  const v = value[value.kind];
  switch (value.kind) {
    case 'array_value':
      return v.values.map((e) => toJS(e, schema && schema.value_schema));
    case 'map_value': {
      const entries = v.entries.map((e) => [toJS(e.key, schema && schema.key_schema), toJS(e.value, schema && schema.value_schema)]);
      // A map with string keys (schemaless JSON reads as one) is an object,
      // its keys sorted: the worker sends a map's entries in no set order.
      // Other keys stay [key, value] pairs.
      if (entries.every(([k]) => typeof k === 'string')) {
        return Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
      }
      return entries;
    }
    case 'struct_value': {
      const out = {};
      v.values.forEach((e, i) => {
        const f = schema && schema.fields[i];
        out[f ? f.name : String(i)] = toJS(e, f && f.schema);
      });
      return out;
    }
    case 'bytes_value':
      return Buffer.from(v).toString('base64');
    default:
      return v;
  }
}

// text renders a record's Data as the line a file sink writes.
function dataText(d, schemas) {
  if (!d || !d.kind) return 'null';
  if (d.kind === 'raw') return Buffer.from(d.raw).toString('utf8');
  const schema = d.schema ? schemas[d.schema - 1] : null;
  const v = toJS(d.value, schema);
  return typeof v === 'string' ? v : JSON.stringify(v);
}

module.exports = { loadProtos, log, grpcError, handler, ConfigDef, dataText, grpc };

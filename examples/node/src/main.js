'use strict';
// A Sluice plugin in Node.js, implemented straight from the contract:
//   1. refuse to run without the worker's magic cookie;
//   2. serve gRPC on 127.0.0.1 and print go-plugin's handshake line
//      "1|1|tcp|127.0.0.1:PORT|grpc" as the first line on stdout;
//   3. serve Plugin, Connector, SourceTask and SinkTask (proto/sluice/plugin/v1),
//      plus plugin.GRPCController/Shutdown (to exit when the worker says) and
//      grpc.health.v1.Health/Check (liveness);
//   4. ignore SIGINT (the worker stops plugins itself) and log JSON to stderr.

const { loadProtos, log, grpcError, handler, grpc } = require('./support');
const { VERSION, classes } = require('./connectors');

const MAGIC_COOKIE_KEY = 'SLUICE_PLUGIN_MAGIC_COOKIE';
const MAGIC_COOKIE_VALUE = 'd2f3b8e4-sluice-connect-plugin-6c1a9f07';
const APP_PROTOCOL_VERSION = 1;
const MAX_MESSAGE_BYTES = 256 << 20;
const CALLBACK_TIMEOUT_MS = 30000;

function byName(name) {
  return classes.find((c) => c.name === name || c.aliases.includes(name) || c.name.split('.').pop() === name);
}

function lookup(name, type) {
  const cls = byName(name);
  if (!cls) throw grpcError(grpc.status.NOT_FOUND, `this plugin does not serve class "${name}"`);
  if (type && cls.type !== type) throw grpcError(grpc.status.FAILED_PRECONDITION, `class ${name} is not a ${type}`);
  return cls;
}

// Worker is the callback client for the worker_target given at Start.
class Worker {
  constructor(pkg, target) {
    this.client = new pkg.sluice.plugin.v1.Worker(target, grpc.credentials.createInsecure());
  }

  // sourceOffset returns the stored offset of one partition, or null.
  sourceOffset(partition) {
    return new Promise((resolve, reject) => {
      const deadline = new Date(Date.now() + CALLBACK_TIMEOUT_MS);
      this.client.SourceOffsets({ partitions: [partition] }, { deadline }, (err, resp) => {
        if (err) return reject(new Error(`read source offsets: ${err.message}`));
        const found = resp.offsets.find((o) => o.offset && o.offset.length > 0);
        resolve(found ? JSON.parse(Buffer.from(found.offset).toString('utf8')) : null);
      });
    });
  }

  close() {
    this.client.close();
  }
}

function main() {
  if (process.env[MAGIC_COOKIE_KEY] !== MAGIC_COOKIE_VALUE) {
    process.stderr.write('This binary is a Sluice plugin. It is started by a Sluice worker (put it in plugin.path), not run directly.\n');
    process.exit(1);
  }
  const versions = (process.env.PLUGIN_PROTOCOL_VERSIONS || String(APP_PROTOCOL_VERSION)).split(',').map(Number);
  if (!versions.includes(APP_PROTOCOL_VERSION)) {
    process.stderr.write(`worker speaks plugin protocol versions ${versions}; this plugin speaks ${APP_PROTOCOL_VERSION}\n`);
    process.exit(1);
  }
  // Ctrl-C reaches the whole process group; the worker shuts plugins down itself.
  process.on('SIGINT', () => {});

  const pkg = loadProtos();
  const v1 = pkg.sluice.plugin.v1;
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  });

  // One process serves one instance: the first Start decides what it is.
  const state = { role: null, connector: null, source: null, sink: null, worker: null, seq: 1 };
  function claim(role) {
    if (state.role) throw grpcError(grpc.status.FAILED_PRECONDITION, `this process already serves ${state.role}`);
    state.role = role;
  }
  function need(what) {
    if (!state[what]) throw grpcError(grpc.status.FAILED_PRECONDITION, `${what} not started`);
    return state[what];
  }
  function stopWorker() {
    if (state.worker) state.worker.close();
    state.worker = null;
  }

  server.addService(v1.Plugin.service, {
    Describe: handler('describe', () => ({
      sdk: `sluice-node-example/${VERSION}`,
      classes: classes.map((c) => ({
        class_name: c.name, aliases: c.aliases, type: c.type, version: VERSION, config: c.config.proto(), documentation: c.doc,
      })),
    })),
  });

  server.addService(v1.Connector.service, {
    Validate: handler('validate', (req) => ({ values: lookup(req.class_name).config.validate(req.config) })),
    Start: handler('start connector', (req) => {
      const cls = lookup(req.class_name);
      claim(`connector ${req.connector_name}`);
      cls.config.parse(req.config);
      state.connector = { cls, config: req.config };
      log('info', 'connector started', { connector: req.connector_name, class: cls.name });
    }),
    TaskConfigs: handler('task configs', (req) => {
      const c = need('connector');
      return { tasks: c.cls.taskConfigs(c.config, req.max_tasks).map((config) => ({ config })) };
    }),
    AlterOffsets: handler('alter offsets', () => ({ handled: false })),
    ExactlyOnceSupport: handler('exactly-once support', (req) => {
      const cls = state.connector ? state.connector.cls : lookup(req.config['connector.class']);
      if (cls.type !== 'CONNECTOR_TYPE_SOURCE') throw grpcError(grpc.status.UNIMPLEMENTED, 'sinks have no exactly-once support answer');
      return { exactly_once: 'EXACTLY_ONCE_UNSPECIFIED', defines_transaction_boundaries: false };
    }),
    Stop: handler('stop connector', () => {
      state.connector = null;
    }),
  });

  server.addService(v1.SourceTask.service, {
    Start: handler('start source task', async (req) => {
      const cls = lookup(req.connector_class, 'CONNECTOR_TYPE_SOURCE');
      claim(`source task ${req.connector_name}-${req.task_id}`);
      state.worker = req.worker_target ? new Worker(pkg, req.worker_target) : null;
      const task = cls.newTask();
      await task.start(req.config, state.worker);
      state.source = task;
      // This task does not implement commitRecord: watermarks suffice.
      return { record_acks: false };
    }),
    Poll: handler('poll', async (req) => {
      const task = need('source');
      const batch = await task.poll(req.max_records, req.timeout_ms || 1000);
      if (batch.records.length === 0) return { schemas: [], records: [], first_seq: 0 };
      const first = state.seq;
      state.seq += batch.records.length;
      return { ...batch, first_seq: first };
    }),
    Ack: handler('ack', () => {
      need('source');
    }),
    Commit: handler('commit', () => {
      need('source');
    }),
    Stop: handler('stop source task', () => {
      if (state.source) state.source.stop();
      stopWorker();
    }),
  });

  server.addService(v1.SinkTask.service, {
    Start: handler('start sink task', async (req) => {
      const cls = lookup(req.connector_class, 'CONNECTOR_TYPE_SINK');
      claim(`sink task ${req.connector_name}-${req.task_id}`);
      state.worker = req.worker_target ? new Worker(pkg, req.worker_target) : null;
      const task = cls.newTask();
      await task.start(req.config);
      state.sink = task;
    }),
    Open: handler('open', (req) => need('sink').open_(req.partitions)),
    Close: handler('close', (req) => need('sink').close_(req.partitions)),
    Put: handler('put', (req) => need('sink').put(req.schemas, req.records)),
    PreCommit: handler('pre-commit', (req) => ({ offsets: need('sink').preCommit(req.offsets) })),
    Stop: handler('stop sink task', () => {
      if (state.sink) state.sink.stop();
      stopWorker();
    }),
  });

  server.addService(pkg.plugin.GRPCController.service, {
    Shutdown: (call, callback) => {
      callback(null, {});
      // Exit once the answer is on its way; the worker waits for the exit.
      setTimeout(() => {
        server.forceShutdown();
        process.exit(0);
      }, 10);
    },
  });

  server.addService(pkg.grpc.health.v1.Health.service, {
    Check: (call, callback) => callback(null, { status: 'SERVING' }),
  });

  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
    if (err) {
      process.stderr.write(`listen: ${err.message}\n`);
      process.exit(1);
    }
    // The handshake: core protocol 1, app protocol 1, network, address, protocol.
    process.stdout.write(`1|${APP_PROTOCOL_VERSION}|tcp|127.0.0.1:${port}|grpc\n`);
    log('debug', 'serving', { port });
  });
}

module.exports = { main };

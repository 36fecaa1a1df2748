'use strict';
// The example connector classes. Each class has a config definition, a
// connector (task configs) and a task.

const fs = require('node:fs');
const { ConfigDef, dataText, grpc, grpcError, log } = require('./support');

const VERSION = '0.1.0';

// ---------------------------------------------------------------- source

// The value schema of every SequenceSource record: a struct {task, seq}.
const SEQUENCE_SCHEMA = {
  type: 'SCHEMA_TYPE_STRUCT',
  name: 'io.sluice.examples.node.Sequence',
  fields: [
    { name: 'task', schema: { type: 'SCHEMA_TYPE_INT32' } },
    { name: 'seq', schema: { type: 'SCHEMA_TYPE_INT64' } },
  ],
};

const sequenceConfig = new ConfigDef([
  { name: 'topic', type: 'CONFIG_TYPE_STRING', importance: 'IMPORTANCE_HIGH', doc: 'Topic to write to.',
    check: (v) => (v.trim() === '' ? 'must not be empty' : null) },
  { name: 'max.records', type: 'CONFIG_TYPE_LONG', default: '-1', doc: 'Records each task emits in total before idling; -1 for no limit.',
    validatorDoc: '[-1,...]', check: (v) => (Number(v) < -1 ? 'Value must be at least -1' : null) },
  { name: 'batch.size', type: 'CONFIG_TYPE_INT', default: '100', doc: 'Records emitted per poll at most.',
    validatorDoc: '[1,...]', check: (v) => (Number(v) < 1 ? 'Value must be at least 1' : null) },
]);

const SequenceSource = {
  name: 'io.sluice.examples.node.SequenceSource',
  aliases: ['NodeSequenceSource'],
  type: 'CONNECTOR_TYPE_SOURCE',
  doc: 'Emits {task, seq} structs, resuming after the stored offset (Node.js example).',
  config: sequenceConfig,
  taskConfigs(config, maxTasks) {
    return Array.from({ length: maxTasks }, (_, i) => ({ ...config, 'task.index': String(i) }));
  },
  newTask: () => new SequenceTask(),
};

class SequenceTask {
  async start(config, worker) {
    const c = sequenceConfig.parse(config);
    this.topic = c.topic;
    this.max = c['max.records'];
    this.batch = c['batch.size'];
    this.task = Number(config['task.index'] || 0);
    this.partition = Buffer.from(JSON.stringify({ task: this.task }));
    this.next = 0;
    // Resume after the stored offset, as OffsetStorageReader.offset does.
    const stored = worker ? await worker.sourceOffset(this.partition) : null;
    if (stored && typeof stored.seq === 'number') this.next = stored.seq + 1;
    this.emitted = 0;
    this.waiting = null;
    log('info', 'sequence task started', { task: this.task, next_seq: this.next });
  }

  // poll returns up to maxRecords records, or waits (until timeoutMs or stop)
  // when the task has emitted max.records.
  async poll(maxRecords, timeoutMs) {
    const n = Math.min(maxRecords || this.batch, this.batch, this.max < 0 ? Infinity : this.max - this.emitted);
    if (n <= 0) {
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.waiting = () => { clearTimeout(timer); resolve(); };
      });
      this.waiting = null;
      return { schemas: [], records: [] };
    }
    const records = [];
    for (let i = 0; i < n; i++, this.next++, this.emitted++) {
      records.push({
        source_partition: this.partition,
        source_offset: Buffer.from(JSON.stringify({ seq: this.next })),
        topic: this.topic,
        value: { value: { struct_value: { values: [{ int_value: this.task }, { int_value: this.next }] } }, schema: 1 },
      });
    }
    return { schemas: [SEQUENCE_SCHEMA], records };
  }

  stop() {
    if (this.waiting) this.waiting();
  }
}

// ---------------------------------------------------------------- sink

const memoryConfig = new ConfigDef([
  { name: 'file', type: 'CONFIG_TYPE_STRING', default: '', doc: 'File to append record values to, one per line; empty keeps them in memory only.' },
]);

const MemorySink = {
  name: 'io.sluice.examples.node.MemorySink',
  aliases: ['NodeMemorySink'],
  type: 'CONNECTOR_TYPE_SINK',
  doc: 'Keeps record values in memory and optionally appends them to a file (Node.js example).',
  config: memoryConfig,
  taskConfigs(config, maxTasks) {
    // One file cannot take concurrent appenders safely: one task.
    return [{ ...config }].slice(0, maxTasks);
  },
  newTask: () => new MemoryTask(),
};

class MemoryTask {
  async start(config) {
    const c = memoryConfig.parse(config);
    this.values = [];
    this.open = new Set();
    this.fd = c.file ? fs.openSync(c.file, 'a') : null;
  }

  open_(partitions) {
    for (const p of partitions) this.open.add(`${p.topic}/${p.partition}`);
  }

  close_(partitions) {
    for (const p of partitions) this.open.delete(`${p.topic}/${p.partition}`);
  }

  put(schemas, records) {
    for (const r of records) {
      if (!this.open.has(`${r.original_topic || r.topic}/${r.original_partition}`)) {
        throw grpcError(grpc.status.FAILED_PRECONDITION, `record of ${r.topic}-${r.partition} before Open`);
      }
      const line = dataText(r.value, schemas);
      this.values.push(line);
      if (this.fd !== null) fs.writeSync(this.fd, line + '\n');
    }
  }

  preCommit(offsets) {
    // Everything put is written; make it durable, then commit all of it.
    if (this.fd !== null) fs.fsyncSync(this.fd);
    return offsets;
  }

  stop() {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
    log('info', 'memory sink stopped', { records: this.values.length });
  }
}

module.exports = { VERSION, classes: [SequenceSource, MemorySink] };

// A Schema Registry client we did not write (kafkajs'), run by
// TestNPMClient against Clink's dev registry:
//
//   node sr.js encode URL USER PASSWORD       registers schemas, prints ids and an encoded record
//   node sr.js decode URL USER PASSWORD HEX   decodes a Confluent-framed record, prints it
//
// Output is one JSON line on stdout.
'use strict'
const { SchemaRegistry, SchemaType } = require('@kafkajs/confluent-schema-registry')

const [mode, host, username, password, hex] = process.argv.slice(2)
const registry = new SchemaRegistry({ host, auth: { username, password }, retry: { retries: 0 } })

const person = JSON.stringify({
  type: 'record',
  name: 'Person',
  namespace: 'clink.interop',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'name', type: 'string' },
  ],
})

const order = `syntax = "proto3";
package clink.interop;
message Order {
  int64 id = 1;
  string item = 2;
}
`

async function main() {
  if (mode === 'encode') {
    const avro = await registry.register({ type: SchemaType.AVRO, schema: person }, { subject: 'interop-value' })
    const again = await registry.register({ type: SchemaType.AVRO, schema: person }, { subject: 'interop-value' })
    const proto = await registry.register({ type: SchemaType.PROTOBUF, schema: order }, { subject: 'interop-proto-value' })
    const latest = await registry.getLatestSchemaId('interop-value')
    const record = await registry.encode(avro.id, { id: 42, name: 'ada' })
    return { avroId: avro.id, againId: again.id, latestId: latest, protoId: proto.id, record: record.toString('hex') }
  }
  if (mode === 'decode') {
    return registry.decode(Buffer.from(hex, 'hex'))
  }
  throw new Error(`unknown mode ${mode}`)
}

main().then(
  (out) => { process.stdout.write(JSON.stringify(out) + '\n') },
  (err) => { process.stderr.write(`${err.stack || err}\n`); process.exit(1) },
)

// Package registry is Clink's Confluent Schema Registry support: the
// Confluent wire format, compatibility checks, a caching client, and a
// development registry server.
//
// # Wire format
//
// AppendHeader and ParseHeader write and read the 5-byte frame (magic byte
// 0x00, big-endian schema id) that Confluent serializers put before every
// key and value; AppendIndexes and ParseIndexes (AppendParseIndexes with a
// reused buffer) the Protobuf message indexes after it. Parsing does not
// allocate. The bytes are franz-go's sr.ConfluentHeader's. Some clients
// write Protobuf records without the indexes (kafkajs'
// @kafkajs/confluent-schema-registry 4.1 does); the frame does not say so,
// and ParseIndexes then reads the message's first bytes as indexes.
//
// # Compatibility
//
// Check(level, type, new, olds) decides whether a schema may follow a
// subject's versions under NONE, BACKWARD, FORWARD, FULL and their
// _TRANSITIVE forms: Avro by hamba/avro's reader/writer resolution,
// Protobuf by comparing descriptors (parsed with protocompile; the rules
// are listed on Check). The dev server and Client.Register both use it;
// registries that answer "compatible" to everything (franz-go's srfake)
// therefore cannot let an incompatible schema through Client.Register.
//
// # Client
//
// NewClient wraps franz-go's sr.Client with basic auth, TLS and a timeout.
// SchemaByID caches forever (ids are immutable) and makes one request per
// id however many goroutines miss at once; an unknown id is an error
// wrapping ErrUnknownID that names the id. Register looks the schema up
// first, checks compatibility itself, then registers; Latest returns a
// subject's newest version. Errors name the registry URL and the subject
// or id.
//
// # Development server
//
// NewServer(Options) builds an in-process registry for `clink kafka serve
// --schema-registry-port`; Serve(ln) answers on a listener the caller
// binds (meant for 127.0.0.1: without Options.Users it refuses a
// non-loopback address unless Options.AllowInsecure), Handler exposes the
// http.Handler, Close stops it. It is a development server: its state is
// in memory, or in one JSON file (Options.DataDir/schema-registry.json,
// rewritten atomically after every change so a restart keeps ids); one
// process, no clustering, no leader election, no Kafka _schemas topic.
//
// It implements, in Confluent's JSON (content type
// application/vnd.schemaregistry.v1+json; application/json accepted) and
// with Confluent's error codes (40401 subject, 40402 version, 40403
// schema not found; 40404-40407 soft/permanent delete order; 40408 no
// subject level; 409 incompatible; 42201 invalid schema; 42202 invalid
// version; 42203 invalid level; 400 bad JSON; 401; 413 body too large;
// 415; 50001 store error):
//
//	GET    /                                    {}
//	GET    /schemas/types                       ["AVRO","PROTOBUF"]
//	GET    /schemas                             ?deleted, ?subjectPrefix
//	GET    /schemas/ids/{id}                    and /schema (raw text), /versions, /subjects
//	GET    /subjects                            ?deleted, ?subjectPrefix
//	POST   /subjects/{subject}                  look a schema up (?deleted)
//	DELETE /subjects/{subject}                  soft; ?permanent=true after a soft delete
//	GET    /subjects/{subject}/versions         ?deleted
//	POST   /subjects/{subject}/versions         register; the same schema again returns its id
//	GET    /subjects/{subject}/versions/{v}     v = 1.., latest or -1; and /schema, /referencedby ([])
//	DELETE /subjects/{subject}/versions/{v}     soft; ?permanent=true after a soft delete
//	GET    /config, PUT /config, DELETE /config             global level (default BACKWARD)
//	GET    /config/{subject} (?defaultToGlobal), PUT, DELETE subject level
//	GET    /mode, /mode/{subject}               always READWRITE
//	POST   /compatibility/subjects/{subject}/versions/{v}   {"is_compatible"}, "messages" with ?verbose=true
//	POST   /compatibility/subjects/{subject}/versions       against the versions the level names
//
// Ids are global, start at 1, only grow (never reused, also after a
// permanent delete), and schemas that are equal after canonicalization
// (Avro: JSON without whitespace, object keys sorted; Protobuf: the
// descriptor without comments or layout) share one id across subjects.
// The text returned is the one first registered. Registering checks the
// new schema against the subject's live versions under the subject's (or
// the global) level; a schema of another type than the versions it is
// checked against is incompatible unless the level is NONE.
//
// Not implemented: JSON Schema (refused with 42201: it cannot be checked),
// schema references (refused with 42201), registering with an explicit id
// or version (import mode), modes other than READWRITE, contexts, GUIDs,
// metadata and rule sets (accepted and dropped), ?normalize (schemas are
// always canonicalized for matching), ?format, and ?fetchMaxId. Protobuf
// schemas may import only google/protobuf/*.proto.
package registry

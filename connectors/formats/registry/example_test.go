package registry_test

import (
	"context"
	"fmt"
	"net"

	"github.com/clink-dev/clink/connectors/formats/registry"
)

// How `clink kafka serve --schema-registry-port N` is meant to run the
// dev registry, and how a Kafka sink and source use it.
func Example() {
	srv, err := registry.NewServer(registry.Options{}) // DataDir: keep ids across restarts
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // 127.0.0.1:N in the CLI
	if err != nil {
		panic(err)
	}
	go srv.Serve(ln)
	defer srv.Close()

	ctx := context.Background()
	cl, err := registry.NewClient("http://"+ln.Addr().String(), registry.ClientOptions{})
	if err != nil {
		panic(err)
	}
	// Sink: register (after our own compatibility check) and frame.
	id, err := cl.Register(ctx, "orders-value", `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}`, registry.Avro)
	if err != nil {
		panic(err)
	}
	record := registry.AppendHeader(nil, id)
	record = append(record, 0x54) // Avro long 42

	// Source: unframe and fetch the writer's schema (cached).
	gotID, payload, err := registry.ParseHeader(record)
	if err != nil {
		panic(err)
	}
	schema, err := cl.SchemaByID(ctx, gotID)
	if err != nil {
		panic(err)
	}
	fmt.Println(gotID, schema.Type, len(payload))
	// Output: 1 AVRO 1
}

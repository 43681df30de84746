// Package pbgen generates Go code for a .proto file as protoc with
// protoc-gen-go would, without protoc: protocompile compiles the file and
// protoc-gen-go's own generator (internal_gengo) runs in-process. It serves
// benchpb's go:generate command and the test that proves bench.pb.go
// current.
package pbgen

import (
	"context"
	"fmt"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/cmd/protoc-gen-go/internal_gengo"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// Generate compiles the .proto file name (relative to dir, which also
// holds its imports) and returns the files protoc-gen-go writes for it
// with paths=source_relative, by name.
func Generate(dir, name string) (map[string][]byte, error) {
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{dir}}),
	}
	files, err := c.Compile(context.Background(), name)
	if err != nil {
		return nil, err
	}
	req := &pluginpb.CodeGeneratorRequest{
		FileToGenerate: []string{name},
		Parameter:      proto.String("paths=source_relative"),
		ProtoFile:      []*descriptorpb.FileDescriptorProto{protodesc.ToFileDescriptorProto(files[0])},
	}
	plugin, err := protogen.Options{}.New(req)
	if err != nil {
		return nil, err
	}
	for _, f := range plugin.Files {
		if f.Generate {
			internal_gengo.GenerateFile(plugin, f)
		}
	}
	resp := plugin.Response()
	if resp.Error != nil {
		return nil, fmt.Errorf("protoc-gen-go: %s", resp.GetError())
	}
	out := map[string][]byte{}
	for _, f := range resp.File {
		out[f.GetName()] = []byte(f.GetContent())
	}
	return out, nil
}

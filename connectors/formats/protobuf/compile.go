package protobuf

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Compile compiles the .proto file at path, resolving its imports in the
// file's directory (and the well-known google/protobuf/*.proto files), and
// returns the descriptor of message, given by its full name
// ("pkg.Outer.Inner") or by its name relative to the file's package
// ("Outer.Inner"); "" is the file's first message, as for a schema
// registry's empty message indexes. Syntax and link errors name
// file:line:column.
func Compile(path, message string) (protoreflect.MessageDescriptor, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("protobuf format: %w", err)
	}
	// The file is compiled under the path given, so that errors name it
	// as the user wrote it; its imports are looked up in its directory.
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			ImportPaths: []string{"", filepath.Dir(path)},
		}),
	}
	return compile(c, path, message)
}

// CompileSource compiles .proto source text, as a schema registry hands it
// out, under the file name name (which error positions use), and returns
// the descriptor of message as Compile does. Only the well-known
// google/protobuf/*.proto files can be imported.
func CompileSource(name, text, message string) (protoreflect.MessageDescriptor, error) {
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(map[string]string{name: text}),
		}),
	}
	return compile(c, name, message)
}

func compile(c protocompile.Compiler, name, message string) (protoreflect.MessageDescriptor, error) {
	files, err := c.Compile(context.Background(), name)
	if err != nil {
		// protocompile's errors already read "file:line:col: reason".
		var pe protocompile.PanicError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("protobuf format: compiling %s: %v", name, pe)
		}
		return nil, fmt.Errorf("protobuf format: %w", err)
	}
	if message == "" {
		return MessageAt(files[0], nil)
	}
	return findMessage(files[0], message)
}

// MessageAt is the message a Confluent schema registry's message indexes
// (registry.ParseIndexes) select in file: the first index picks a
// top-level message, each further one a message nested in the one before;
// no indexes select the first message. For the file of a descriptor
// Compile returned, pass md.ParentFile().
func MessageAt(file protoreflect.FileDescriptor, indexes []int) (protoreflect.MessageDescriptor, error) {
	if len(indexes) == 0 {
		indexes = []int{0}
	}
	ms := file.Messages()
	var md protoreflect.MessageDescriptor
	for k, i := range indexes {
		if i < 0 || i >= ms.Len() {
			where := file.Path()
			if md != nil {
				where = string(md.FullName())
			}
			return nil, fmt.Errorf("protobuf format: message indexes %v: %s has %d messages, no index %d (at position %d)", indexes, where, ms.Len(), i, k)
		}
		md = ms.Get(i)
		ms = md.Messages()
	}
	return md, nil
}

// findMessage looks message up in f by full name, then relative to f's
// package.
func findMessage(f linker.File, message string) (protoreflect.MessageDescriptor, error) {
	full := protoreflect.FullName(strings.TrimPrefix(message, "."))
	if md := f.FindDescriptorByName(full); md != nil {
		if m, ok := md.(protoreflect.MessageDescriptor); ok {
			return m, nil
		}
	}
	if pkg := f.Package(); pkg != "" {
		if md := f.FindDescriptorByName(pkg + "." + full); md != nil {
			if m, ok := md.(protoreflect.MessageDescriptor); ok {
				return m, nil
			}
		}
	}
	var names []string
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			m := ms.Get(i)
			if m.IsMapEntry() {
				continue
			}
			names = append(names, string(m.FullName()))
			walk(m.Messages())
		}
	}
	walk(f.Messages())
	sort.Strings(names)
	if len(names) == 0 {
		return nil, fmt.Errorf("protobuf format: %s defines no message (looking for %q)", f.Path(), message)
	}
	return nil, fmt.Errorf("protobuf format: %s has no message %q; it defines %s", f.Path(), message, strings.Join(names, ", "))
}

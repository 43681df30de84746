package lineage

import (
	"fmt"
	"strings"

	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	ext "github.com/substrait-io/substrait-protobuf/go/substraitpb/extensions"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait"
)

// JobOf is the lineage of a job: its input datasets (every named table a
// ReadRel reads) and outputs (every WriteRel's table), each named by its
// connector (connectors.Lineage) from the options and columns the plan
// carries, once per job. A table whose connector cannot name it is left
// out and its error returned in errs; the job still has its events.
// A bare SELECT, printed, has no output dataset.
func JobOf(plan *pb.Plan, reg *connectors.Registry, name, sql string) (job *Job, errs []error) {
	job = &Job{Name: name, SQL: sql, Bounded: true}
	seen := map[string]bool{}
	add := func(out *[]Dataset, table string, ns *pb.NamedStruct, ae *ext.AdvancedExtension, source bool) {
		d, bounded, err := dataset(reg, table, ns, ae, source)
		if err != nil {
			errs = append(errs, err)
			return
		}
		if source && !bounded {
			job.Bounded = false
		}
		key := fmt.Sprint(source, d.Namespace, "\x00", d.Name)
		if d.Namespace == "" || seen[key] {
			return
		}
		seen[key] = true
		*out = append(*out, d)
	}
	walk(plan.ProtoReflect(), func(m proto.Message) {
		switch x := m.(type) {
		case *pb.ReadRel:
			if nt := x.GetNamedTable(); nt != nil {
				add(&job.Inputs, strings.Join(nt.GetNames(), "."), x.GetBaseSchema(), x.GetAdvancedExtension(), true)
			}
		case *pb.WriteRel:
			if nt := x.GetNamedTable(); nt != nil {
				add(&job.Outputs, strings.Join(nt.GetNames(), "."), x.GetTableSchema(), x.GetAdvancedExtension(), false)
			}
		}
	})
	if len(job.Inputs) == 0 && len(errs) == 0 {
		job.Bounded = true // VALUES only
	}
	return job, errs
}

// walk calls f on every message under m, depth first.
func walk(m protoreflect.Message, f func(proto.Message)) {
	f(m.Interface())
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind {
			return true
		}
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				walk(l.Get(i).Message(), f)
			}
		case fd.IsMap():
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					walk(mv.Message(), f)
					return true
				})
			}
		default:
			walk(v.Message(), f)
		}
		return true
	})
}

func dataset(reg *connectors.Registry, table string, ns *pb.NamedStruct, ae *ext.AdvancedExtension, source bool) (Dataset, bool, error) {
	schema, err := substrait.ArrowSchema(ns)
	if err != nil {
		return Dataset{}, false, fmt.Errorf("table %s: %w", table, err)
	}
	opts, err := substrait.OptionsOf(ae)
	if err != nil {
		return Dataset{}, false, fmt.Errorf("table %s: %w", table, err)
	}
	f, err := reg.Lookup(opts["connector"])
	if err != nil {
		return Dataset{}, false, fmt.Errorf("table %s: %w", table, err)
	}
	vo, err := f.Spec().Validate(opts)
	if err != nil {
		return Dataset{}, false, fmt.Errorf("table %s: %w", table, err)
	}
	bounded := false
	if b, ok := f.(connectors.Boundedness); ok {
		bounded = b.Bounded(vo)
	}
	l, ok := f.(connectors.Lineage)
	if !ok {
		return Dataset{}, bounded, nil
	}
	t := &connectors.Table{Name: table, Schema: schema, Options: vo, EventTimeCol: -1}
	namespace, name, err := l.Dataset(t)
	if err != nil {
		return Dataset{}, bounded, fmt.Errorf("table %s: lineage dataset: %w", table, err)
	}
	d := Dataset{Namespace: namespace, Name: name}
	for _, fl := range schema.Fields() {
		d.Fields = append(d.Fields, Field{Name: fl.Name, Type: kernels.SQLTypeName(fl.Type)})
	}
	return d, bounded, nil
}

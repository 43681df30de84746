package substrait

import (
	"fmt"
	"hash/fnv"
	"strings"

	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
)

// maxJobName bounds a derived job name, which names a checkpoint
// directory (DIR/<job name>).
const maxJobName = 100

// JobName is the name of a job given without one, after Flink's defaults:
// "insert-into_<table>" for an INSERT, the tables joined by commas for
// several ("insert-into_a,b"), "collect" for a bare SELECT (after the
// tables when a script has both). It depends on the plan's sinks only, so
// a rerun of the same SQL finds its checkpoints again. Characters other
// than letters, digits and "._-," become "_", and a name longer than 100
// bytes is cut and ends in a hash of the whole, so it is one safe path
// element.
func JobName(p *pb.Plan) string {
	var tables []string
	collect := false
	for _, r := range p.GetRelations() {
		if w := r.GetRoot().GetInput().GetWrite(); w != nil {
			tables = append(tables, strings.Join(w.GetNamedTable().GetNames(), "."))
		} else {
			collect = true
		}
	}
	name := "collect"
	if len(tables) > 0 {
		if collect {
			tables = append(tables, "collect")
		}
		name = "insert-into_" + strings.Join(tables, ",")
	}
	name = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("._-,", r):
			return r
		}
		return '_'
	}, name)
	if len(name) > maxJobName {
		h := fnv.New32a()
		h.Write([]byte(name))
		name = fmt.Sprintf("%s-%08x", name[:maxJobName-9], h.Sum32())
	}
	return name
}

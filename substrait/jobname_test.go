package substrait

import (
	"strings"
	"testing"

	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
)

func TestJobName(t *testing.T) {
	insert := func(names ...string) *pb.PlanRel {
		w := &pb.WriteRel{WriteType: &pb.WriteRel_NamedTable{NamedTable: &pb.NamedObjectWrite{Names: names}}}
		return &pb.PlanRel{RelType: &pb.PlanRel_Root{Root: &pb.RelRoot{Input: &pb.Rel{RelType: &pb.Rel_Write{Write: w}}}}}
	}
	sel := &pb.PlanRel{RelType: &pb.PlanRel_Root{Root: &pb.RelRoot{Input: &pb.Rel{RelType: &pb.Rel_Read{Read: &pb.ReadRel{}}}}}}
	long := strings.Repeat("t", 120)
	for _, c := range []struct {
		rels []*pb.PlanRel
		want string
	}{
		{[]*pb.PlanRel{insert("sensor_window_stats")}, "insert-into_sensor_window_stats"},
		{[]*pb.PlanRel{insert("a"), insert("B")}, "insert-into_a,B"},
		{[]*pb.PlanRel{sel}, "collect"},
		{[]*pb.PlanRel{insert("a"), sel}, "insert-into_a,collect"},
		{[]*pb.PlanRel{insert("../x y/grüße")}, "insert-into_.._x_y_gr__e"},
		{[]*pb.PlanRel{insert(long)}, "insert-into_" + long[:100-9-len("insert-into_")] + "-"},
	} {
		got := JobName(&pb.Plan{Relations: c.rels})
		if !strings.HasPrefix(got, c.want) || len(got) > maxJobName || strings.ContainsRune(got, '/') {
			t.Errorf("JobName = %q, want %q", got, c.want)
		}
		if !strings.HasSuffix(c.want, "-") && got != c.want {
			t.Errorf("JobName = %q, want %q", got, c.want)
		}
	}
}

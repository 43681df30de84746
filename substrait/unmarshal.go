package substrait

import (
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"google.golang.org/protobuf/proto"
)

// planDepth bounds the nesting protobuf follows when it reads a plan. A
// binary expression nests three messages (a function call, its argument,
// the expression), and a statement may hold 20,000 operators (the SQL
// front end's limit), so protobuf's default of 10,000 levels refused
// plans of a few thousand terms that compile; this allows the SQL limit
// with room. Decoding recurses on the goroutine's stack, which grows.
const planDepth = 1 << 17

// UnmarshalPlan reads a binary Substrait plan, as deep as a compiled
// statement may be.
func UnmarshalPlan(data []byte, p *pb.Plan) error {
	return proto.UnmarshalOptions{RecursionLimit: planDepth}.Unmarshal(data, p)
}
